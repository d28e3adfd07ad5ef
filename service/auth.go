package service

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Role is what a token may do.
type Role string

// The roles. Each endpoint names the roles it admits; admin is admitted
// everywhere.
const (
	// RoleIngest sends events and sees only whether each was accepted.
	RoleIngest Role = "ingest"
	// RoleAnnotator lists, claims and labels requests, and sees only the
	// records it claims.
	RoleAnnotator Role = "annotator"
	// RoleOfficer reads releases, models, budgets, the ledger and metrics.
	RoleOfficer Role = "officer"
	// RoleAdmin creates learners and may do everything the others may.
	RoleAdmin Role = "admin"
)

// Roles lists the roles.
var Roles = []Role{RoleIngest, RoleAnnotator, RoleOfficer, RoleAdmin}

// ParseRole parses a role name.
func ParseRole(s string) (Role, error) {
	if r := Role(s); slices.Contains(Roles, r) {
		return r, nil
	}
	return "", fmt.Errorf("unknown role %q (want ingest, annotator, officer or admin)", s)
}

// tokenRecord is what the store keeps of a token: never the token.
type tokenRecord struct {
	Role    Role      `json:"role"`
	Created time.Time `json:"created"`
}

// tokenPrefix marks dpal tokens (so that secret scanners can find them).
const tokenPrefix = "dpal_"

// TokenID is the public name of a token: the first 16 hex digits of its
// SHA-256, which `dpal serve token revoke` takes.
func TokenID(token string) string { return hashToken(token)[:16] }

func hashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// CreateToken makes a new token of role, stores its hash and returns it:
// the only time the token itself exists outside its holder.
func (s *Store) CreateToken(role Role) (string, error) {
	if _, err := ParseRole(string(role)); err != nil {
		return "", err
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	tok := tokenPrefix + string(role) + "_" + base64.RawURLEncoding.EncodeToString(b[:])
	err := s.db.Update(func(tx *bolt.Tx) error {
		return putJSON(tx.Bucket(bucketTokens), []byte(hashToken(tok)), tokenRecord{Role: role, Created: time.Now().UTC()})
	})
	if err != nil {
		return "", fmt.Errorf("store %s: %w", s.path, err)
	}
	return tok, nil
}

// RevokeToken deletes the token whose TokenID (or full token) is id.
func (s *Store) RevokeToken(id string) error {
	if strings.HasPrefix(id, tokenPrefix) {
		id = TokenID(id)
	}
	if len(id) < 16 {
		return errors.New("token id: want the 16 hex digits `token create` printed (or the token)")
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTokens)
		var found [][]byte
		_ = b.ForEach(func(k, _ []byte) error {
			if strings.HasPrefix(string(k), id) {
				found = append(found, slices.Clone(k))
			}
			return nil
		})
		if len(found) != 1 {
			return fmt.Errorf("token id %s matches %d tokens, want 1", id, len(found))
		}
		return b.Delete(found[0])
	})
}

// hasRole reports whether the store holds a token of role.
func (s *Store) hasRole(role Role) (bool, error) {
	toks, err := s.tokens()
	for _, t := range toks {
		if t.role == role {
			return true, err
		}
	}
	return false, err
}

type token struct {
	hash []byte // SHA-256, raw
	role Role
}

func (s *Store) tokens() ([]token, error) {
	var out []token
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTokens).ForEach(func(k, v []byte) error {
			var rec tokenRecord
			if _, err := getJSON(tx.Bucket(bucketTokens), k, &rec); err != nil {
				return err
			}
			h, err := hex.DecodeString(string(k))
			if err != nil || len(h) != sha256.Size {
				return fmt.Errorf("token hash %q is malformed", k)
			}
			out = append(out, token{hash: h, role: rec.Role})
			return nil
		})
	})
	return out, err
}

// authenticator checks bearer tokens against the stored hashes.
type authenticator struct {
	store *Store
	mu    sync.RWMutex
	toks  []token
}

func (a *authenticator) reload() error {
	toks, err := a.store.tokens()
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.toks = toks
	a.mu.Unlock()
	return nil
}

// role returns the role of the request's bearer token. Every stored hash
// is compared, in constant time, so the time taken says nothing about
// which token (or how much of one) matched.
func (a *authenticator) role(r *http.Request) (Role, string, bool) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return "", "", false
	}
	h := sha256.Sum256([]byte(tok))
	a.mu.RLock()
	defer a.mu.RUnlock()
	var role Role
	for _, t := range a.toks {
		if subtle.ConstantTimeCompare(h[:], t.hash) == 1 {
			role = t.role
		}
	}
	return role, hex.EncodeToString(h[:8]), role != ""
}

// admits reports whether a token of role may call an endpoint open to allowed.
func admits(role Role, allowed []Role) bool {
	return role == RoleAdmin || slices.Contains(allowed, role)
}
