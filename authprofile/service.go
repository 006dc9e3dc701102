package authprofile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/jobs"
)

// Service is the API's side: create, change, list and delete profiles,
// sealing what they are given.
type Service struct {
	Repo   Repository
	Sealer *Sealer
	// Queue takes the auth:test tasks of Test; nil: Test is unavailable.
	Queue TaskQueue
	// MaxPerKey caps the profiles one API key holds (0: DefaultMaxPerKey;
	// negative: no cap); limits.go.
	MaxPerKey int
}

// TaskQueue submits a task (queue.AsynqQueue).
type TaskQueue interface {
	Submit(ctx context.Context, p jobs.Payload, timeout time.Duration) error
}

// TestTimeout bounds POST /v1/auth-profiles/:id/test: a worker must pick
// the task up and run the recipe within it.
const TestTimeout = 150 * time.Second

// testPollMax is the longest pause between two reads of a test's outcome.
const testPollMax = 2 * time.Second

// TestResult is the answer of a test login.
type TestResult struct {
	OK      bool               `json:"ok"`
	Version int                `json:"version"`
	Error   string             `json:"error,omitempty"`
	Log     []capture.LogEntry `json:"log"`
}

// Test has a worker run p's recipe now and waits for the outcome: the
// action log (secrets masked), and on success the new login's version.
func (s *Service) Test(ctx context.Context, p *Profile) (*TestResult, error) {
	if s.Queue == nil {
		return nil, errors.New("no task queue for test logins")
	}
	if !p.HasRecipe() {
		var errs jobs.FieldErrors
		errs.Add("no_recipe", "login_url", "the profile has no recipe to test (it was made from a storage_state)")
		return nil, jobs.ValidationErrors(errs)
	}
	testID := jobs.NewID()
	if err := s.Queue.Submit(ctx, TestPayload{TestID: testID, ProfileID: p.ID}, 0); err != nil {
		return nil, fmt.Errorf("enqueue test login: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, TestTimeout)
	defer cancel()
	// The outcome is polled from Postgres, 4 times a second at first, then less often
	// (at most every testPollMax): a long login costs a read every 2 s, not 4 a second.
	pause := 250 * time.Millisecond
	for {
		cur, err := s.Repo.GetAuthProfile(wctx, p.ID)
		if err != nil {
			return nil, err
		}
		if cur.LastTestID == testID {
			log := cur.LastLog
			if log == nil {
				log = []capture.LogEntry{}
			}
			return &TestResult{OK: cur.LastTestError == "", Version: cur.Version, Error: cur.LastTestError, Log: log}, nil
		}
		select {
		case <-wctx.Done():
			return nil, fmt.Errorf("no worker finished the test login within %s: %w", TestTimeout, wctx.Err())
		case <-time.After(pause):
		}
		pause = min(pause*3/2, testPollMax)
	}
}

// ErrNoSealer: auth profiles need SNAPQ_SECRET_KEY.
var ErrNoSealer = errors.New("auth profiles are off: set SNAPQ_SECRET_KEY on the api and the workers")

func secretsAAD(id string) string { return id + "/secrets" }
func stateAAD(id string) string   { return id + "/state" }

// Create validates body and stores a new profile of owner.
func (s *Service) Create(ctx context.Context, owner string, body []byte) (*Profile, error) {
	if s.Sealer == nil {
		return nil, ErrNoSealer
	}
	var in Input
	var errs jobs.FieldErrors
	if !jobs.DecodeStrict(body, &in, "", &errs) {
		return nil, jobs.ValidationErrors(errs)
	}
	if err := s.checkProfileCap(ctx, owner); err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	p := &Profile{ID: jobs.NewID(), Owner: owner, CreatedAt: now, UpdatedAt: now}
	secrets := map[string]string{}
	st := in.apply(p, secrets, true, &errs)
	if err := jobs.ValidationErrors(errs); err != nil {
		return nil, err
	}
	if err := s.sealSecrets(p, secrets); err != nil {
		return nil, err
	}
	var sealed []byte
	if st != nil {
		var err error
		if sealed, err = s.sealState(p.ID, st); err != nil {
			return nil, err
		}
		p.Version, p.LastLoginAt = 1, &now
	}
	if err := s.Repo.CreateAuthProfile(ctx, p, sealed); err != nil {
		return nil, err
	}
	return p, nil
}

// Update applies a PATCH body to cur: fields given replace the stored ones,
// secrets are merged by name (null removes one), a storage_state becomes the
// next login version. A PATCH that changes origins, login_url or steps keeps
// only the secrets it sends (patch.go).
func (s *Service) Update(ctx context.Context, cur *Profile, body []byte) (*Profile, error) {
	if s.Sealer == nil {
		return nil, ErrNoSealer
	}
	var in Input
	var errs jobs.FieldErrors
	if !jobs.DecodeStrict(body, &in, "", &errs) {
		return nil, jobs.ValidationErrors(errs)
	}
	secrets, unreadable := s.keptSecrets(cur, &in)
	p := *cur
	p.SecretNames = append([]string(nil), cur.SecretNames...)
	st := in.apply(&p, secrets, false, &errs)
	if unreadable && in.Secrets == nil {
		errs.Add("secrets_unreadable", "secrets", "the stored secrets were sealed under a key this server no longer has "+
			"(SNAPQ_SECRET_KEYS_OLD): send them again")
	}
	if err := jobs.ValidationErrors(errs); err != nil {
		return nil, err
	}
	if err := s.sealSecrets(&p, secrets); err != nil {
		return nil, err
	}
	p.UpdatedAt = time.Now().UTC()
	if err := s.Repo.UpdateAuthProfile(ctx, &p); err != nil {
		return nil, err
	}
	if st != nil {
		sealed, err := s.sealState(p.ID, st)
		if err != nil {
			return nil, err
		}
		v, _, err := s.Repo.AddAuthState(ctx, p.ID, -1, sealed, SourceUpload, nil)
		if err != nil {
			return nil, err
		}
		p.Version, p.LastLoginAt = v, &p.UpdatedAt
	}
	return &p, nil
}

// Secrets opens p's secrets.
func (s *Service) Secrets(p *Profile) (map[string]string, error) {
	return openSecrets(s.Sealer, p)
}

func openSecrets(sl *Sealer, p *Profile) (map[string]string, error) {
	secrets := map[string]string{}
	if len(p.SealedSecrets) == 0 {
		return secrets, nil
	}
	plain, err := sl.Open(p.SealedSecrets, secretsAAD(p.ID))
	if err != nil {
		return nil, fmt.Errorf("auth profile %s secrets: %w", p.ID, err)
	}
	if err := json.Unmarshal(plain, &secrets); err != nil {
		return nil, fmt.Errorf("auth profile %s secrets: %w", p.ID, err)
	}
	return secrets, nil
}

func (s *Service) sealSecrets(p *Profile, secrets map[string]string) error {
	if len(secrets) == 0 {
		p.SealedSecrets = nil
		return nil
	}
	plain, _ := json.Marshal(secrets)
	sealed, err := s.Sealer.Seal(plain, secretsAAD(p.ID))
	if err != nil {
		return err
	}
	p.SealedSecrets = sealed
	return nil
}

func (s *Service) sealState(id string, st *capture.StorageState) ([]byte, error) {
	return sealState(s.Sealer, id, st)
}

func sealState(sl *Sealer, id string, st *capture.StorageState) ([]byte, error) {
	plain, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	return sl.Seal(plain, stateAAD(id))
}

func openState(sl *Sealer, id string, sealed []byte) (*capture.StorageState, error) {
	plain, err := sl.Open(sealed, stateAAD(id))
	if err != nil {
		return nil, fmt.Errorf("auth profile %s login: %w", id, err)
	}
	var st capture.StorageState
	if err := json.Unmarshal(plain, &st); err != nil {
		return nil, fmt.Errorf("auth profile %s login: %w", id, err)
	}
	return &st, nil
}

// View is a profile as the API shows it: never a secret's value, never the
// login's cookies.
type View struct {
	ID            string             `json:"id"`
	Name          string             `json:"name"`
	Origins       []string           `json:"origins"`
	LoginURL      string             `json:"login_url,omitempty"`
	Steps         []json.RawMessage  `json:"steps"`
	Success       Success            `json:"success"`
	LoggedOut     LoggedOut          `json:"logged_out"`
	RefreshEveryS int                `json:"refresh_every_s"`
	Secrets       []string           `json:"secrets"` // names only
	Version       int                `json:"version"`
	LastLoginAt   *time.Time         `json:"last_login_at"`
	LastFailureAt *time.Time         `json:"last_failure_at"`
	LastFailure   string             `json:"last_failure,omitempty"`
	LastLog       []capture.LogEntry `json:"last_log,omitempty"`
	CreatedAt     time.Time          `json:"created_at"`
	UpdatedAt     time.Time          `json:"updated_at"`
}

// View is p as the API shows it.
func (p *Profile) View() View {
	steps := p.Spec.Steps
	if steps == nil {
		steps = []json.RawMessage{}
	}
	names := p.SecretNames
	if names == nil {
		names = []string{}
	}
	return View{ID: p.ID, Name: p.Name, Origins: p.Origins, LoginURL: p.Spec.LoginURL, Steps: steps,
		Success: p.Spec.Success, LoggedOut: p.Spec.LoggedOut, RefreshEveryS: p.Spec.RefreshEveryS, Secrets: names,
		Version: p.Version, LastLoginAt: p.LastLoginAt, LastFailureAt: p.LastFailureAt, LastFailure: p.LastFailure,
		LastLog: p.LastLog, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}
