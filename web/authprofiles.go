package web

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/snapq/snapq/authprofile"
	"github.com/snapq/snapq/jobs"
)

// Auth profile endpoints (authprofile): a named login per API key. Secrets
// are write-only: no response carries a secret's value or a login's cookies.

const authProfileKey = "snapq.auth_profile"

func (s *Server) routeAuthProfiles(v1 *gin.RouterGroup) {
	jsonBody := s.h(s.readJSON("the body"))
	v1.POST("/auth-profiles", jsonBody, s.h(s.createAuthProfile))
	v1.GET("/auth-profiles", s.h(s.listAuthProfiles))
	v1.GET("/auth-profiles/:id", s.loadAuthProfile, s.h(s.getAuthProfile))
	v1.PATCH("/auth-profiles/:id", jsonBody, s.loadAuthProfile, s.h(s.updateAuthProfile))
	v1.DELETE("/auth-profiles/:id", s.loadAuthProfile, s.h(s.deleteAuthProfile))
	v1.POST("/auth-profiles/:id/test", s.loadAuthProfile, s.spend(jobs.WorkAuthTest), s.h(s.testAuthProfile))
}

// testAuthProfile has a worker log in with the profile now and answers with
// the recipe's action log (secrets masked): 200 whether or not it logged in.
func (s *Server) testAuthProfile(c *gin.Context) error {
	if err := s.authProfilesOn(); err != nil {
		return err
	}
	p, err := loaded[*authprofile.Profile](c, authProfileKey)
	if err != nil {
		return err
	}
	// The login may take up to authprofile.TestTimeout, longer than the
	// server's write timeout (a minute), which would close the connection
	// before the answer on a slow machine or site: this response gets the
	// test's own bound instead.
	_ = http.NewResponseController(c.Writer).SetWriteDeadline(time.Now().Add(authprofile.TestTimeout + 15*time.Second))
	res, err := s.AuthProfiles.Test(c.Request.Context(), p)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, res)
	return nil
}

func (s *Server) loadAuthProfile(c *gin.Context) {
	loader(s, authProfileKey, s.ownedAuthProfile)(c)
}

// ownedAuthProfile loads a profile the caller owns: another key's is 404.
func (s *Server) ownedAuthProfile(c *gin.Context, id string) (*authprofile.Profile, error) {
	if s.AuthProfiles == nil {
		return nil, fmt.Errorf("auth profile %s: %w", id, jobs.ErrNotFound)
	}
	p, err := s.AuthProfiles.Repo.GetAuthProfile(c.Request.Context(), id)
	if err == nil && s.Config.Auth && p.Owner != owner(c) {
		err = jobs.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("auth profile %s: %w", id, err)
	}
	return p, nil
}

func (s *Server) authProfilesOn() error {
	if s.AuthProfiles == nil || s.AuthProfiles.Sealer == nil {
		return &apiError{Status: http.StatusNotImplemented, Code: "auth_profiles_off", Message: authprofile.ErrNoSealer.Error()}
	}
	return nil
}

func (s *Server) createAuthProfile(c *gin.Context) error {
	if err := s.authProfilesOn(); err != nil {
		return err
	}
	body, err := loaded[[]byte](c, bodyKey)
	if err != nil {
		return err
	}
	p, err := s.AuthProfiles.Create(c.Request.Context(), owner(c), body)
	if err != nil {
		return authProfileError(err)
	}
	c.Header("Location", "/v1/auth-profiles/"+p.ID)
	c.JSON(http.StatusCreated, p.View())
	return nil
}

type authProfileList struct {
	AuthProfiles []authprofile.View `json:"auth_profiles"`
}

func (s *Server) listAuthProfiles(c *gin.Context) error {
	out := authProfileList{AuthProfiles: []authprofile.View{}}
	if s.AuthProfiles == nil {
		c.JSON(http.StatusOK, out)
		return nil
	}
	list, err := s.AuthProfiles.Repo.ListAuthProfiles(c.Request.Context(), s.listOwner(c))
	if err != nil {
		return fmt.Errorf("list auth profiles: %w", err)
	}
	for _, p := range list {
		out.AuthProfiles = append(out.AuthProfiles, p.View())
	}
	c.JSON(http.StatusOK, out)
	return nil
}

func (s *Server) getAuthProfile(c *gin.Context) error {
	p, err := loaded[*authprofile.Profile](c, authProfileKey)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, p.View())
	return nil
}

func (s *Server) updateAuthProfile(c *gin.Context) error {
	if err := s.authProfilesOn(); err != nil {
		return err
	}
	cur, err := loaded[*authprofile.Profile](c, authProfileKey)
	if err != nil {
		return err
	}
	body, err := loaded[[]byte](c, bodyKey)
	if err != nil {
		return err
	}
	p, err := s.AuthProfiles.Update(c.Request.Context(), cur, body)
	if err != nil {
		return authProfileError(err)
	}
	c.JSON(http.StatusOK, p.View())
	return nil
}

func (s *Server) deleteAuthProfile(c *gin.Context) error {
	p, err := loaded[*authprofile.Profile](c, authProfileKey)
	if err != nil {
		return err
	}
	if err := s.AuthProfiles.Repo.DeleteAuthProfile(c.Request.Context(), p.ID); err != nil {
		return fmt.Errorf("auth profile %s: %w", p.ID, err)
	}
	c.Status(http.StatusNoContent)
	return nil
}

// authProfileError maps the profile service's own errors.
func authProfileError(err error) error {
	if errors.Is(err, authprofile.ErrTooManyProfiles) {
		return &apiError{Status: http.StatusConflict, Code: "too_many_auth_profiles", Message: err.Error()}
	}
	if errors.Is(err, authprofile.ErrNameTaken) {
		return &apiError{Status: http.StatusConflict, Code: "name_taken", Message: err.Error(), Field: "name"}
	}
	return err
}
