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
	tok, _, err := s.createToken(role, false)
	return tok, err
}

// createToken is CreateToken; with first, only when the store holds no
// token of role (made false when it holds one), decided in the same
// transaction, so that of replicas starting together on a new store one
// makes the first admin token.
func (s *Store) createToken(role Role, first bool) (tok string, made bool, err error) {
	if _, err := ParseRole(string(role)); err != nil {
		return "", false, err
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", false, err
	}
	tok = tokenPrefix + string(role) + "_" + base64.RawURLEncoding.EncodeToString(b[:])
	err = s.db.Update(func(tx kvTx) error {
		tb := tx.Bucket(bucketTokens)
		if first {
			if err := lockTx(tx, "tokens"); err != nil {
				return err
			}
			has, err := bucketHasRole(tb, role)
			if err != nil || has {
				return err
			}
		}
		made = true
		return putJSON(tb, []byte(hashToken(tok)), tokenRecord{Role: role, Created: time.Now().UTC()})
	})
	if err != nil {
		return "", false, fmt.Errorf("store %s: %w", s.path, err)
	}
	return tok, made, nil
}

// hasToken reports whether the store holds tok's hash (false on an
// error).
func (s *Store) hasToken(tok string) bool {
	found := false
	_ = s.db.View(func(tx kvTx) error {
		found = tx.Bucket(bucketTokens).Get([]byte(hashToken(tok))) != nil
		return nil
	})
	return found
}

// bucketHasRole reports whether the tokens bucket b holds a token of role.
func bucketHasRole(b kvBucket, role Role) (bool, error) {
	has := false
	err := b.ForEach(func(_, v []byte) error {
		var rec tokenRecord
		if err := jsonUnmarshal(v, &rec); err != nil {
			return err
		}
		has = has || rec.Role == role
		return nil
	})
	return has, err
}

// RevokeToken deletes the token whose TokenID (or full token) is id.
func (s *Store) RevokeToken(id string) error {
	if strings.HasPrefix(id, tokenPrefix) {
		id = TokenID(id)
	}
	if len(id) < 16 {
		return errors.New("token id: want the 16 hex digits `token create` printed (or the token)")
	}
	return s.db.Update(func(tx kvTx) error {
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

type token struct {
	hash []byte // SHA-256, raw
	role Role
}

func (s *Store) tokens() ([]token, error) {
	var out []token
	err := s.db.View(func(tx kvTx) error {
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
	store  *Store
	mu     sync.RWMutex
	toks   []token
	loaded time.Time // of toks
}

// In a shared store other processes (replicas, `dpal serve token`) create
// and revoke tokens: the hashes are read again when they are older than
// tokenMaxAge (a revocation elsewhere takes effect within it), and an
// unknown token is looked up in the store by its hash (a token just
// created works at once).
const tokenMaxAge = 2 * time.Second

func (a *authenticator) reload() error {
	toks, err := a.store.tokens()
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.toks, a.loaded = toks, time.Now()
	a.mu.Unlock()
	return nil
}

// refresh reloads the hashes of a shared store older than age; on a
// failure the ones held stay in use.
func (a *authenticator) refresh(age time.Duration) {
	if !a.store.shared {
		return
	}
	a.mu.RLock()
	stale := time.Since(a.loaded) > age
	a.mu.RUnlock()
	if stale {
		_ = a.reload()
	}
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
	a.refresh(tokenMaxAge)
	role := a.match(h[:])
	if role == "" && a.store.shared && a.store.hasToken(tok) {
		_ = a.reload()
		role = a.match(h[:])
	}
	return role, hex.EncodeToString(h[:8]), role != ""
}

// match is the role of the token hash h, "" for none.
func (a *authenticator) match(h []byte) Role {
	a.mu.RLock()
	defer a.mu.RUnlock()
	var role Role
	for _, t := range a.toks {
		if subtle.ConstantTimeCompare(h, t.hash) == 1 {
			role = t.role
		}
	}
	return role
}

// admits reports whether a token of role may call an endpoint open to allowed.
func admits(role Role, allowed []Role) bool {
	return role == RoleAdmin || slices.Contains(allowed, role)
}
