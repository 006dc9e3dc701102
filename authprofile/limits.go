package authprofile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
)

// ErrTooManyProfiles is Create's answer when the API key already holds MaxPerKey
// profiles. The api answers 409 too_many_auth_profiles: waiting does not help, deleting
// a profile does.
var ErrTooManyProfiles = errors.New("too many auth profiles for this API key")

// DefaultMaxPerKey is Service.MaxPerKey's default (SNAPQ_MAX_AUTH_PROFILES_PER_KEY).
const DefaultMaxPerKey = 50

// profileCounter counts an owner's profiles (store.Store).
type profileCounter interface {
	CountAuthProfiles(ctx context.Context, owner string) (int, error)
}

// checkProfileCap refuses a new profile of owner past MaxPerKey (0: the default;
// negative: no cap). It is checked before the insert, so two creates racing at the cap
// may both pass: the cap bounds a key's profiles to within its concurrency of it.
func (s *Service) checkProfileCap(ctx context.Context, owner string) error {
	limit := cmp.Or(s.MaxPerKey, DefaultMaxPerKey)
	counter, ok := s.Repo.(profileCounter)
	if limit < 0 || owner == "" || !ok {
		return nil
	}
	n, err := counter.CountAuthProfiles(ctx, owner)
	if err != nil {
		return err
	}
	if n >= limit {
		return fmt.Errorf("%w: it has %d, the limit is %d (SNAPQ_MAX_AUTH_PROFILES_PER_KEY)", ErrTooManyProfiles, n, limit)
	}
	return nil
}
