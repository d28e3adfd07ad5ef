package service

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/dpal-dev/dpal/dp/account"
	"github.com/dpal-dev/dpal/dp/ledger"
)

// All of a pool project's persistence is here, as functions over one
// bbolt transaction. Buckets:
//
//	projects                        name → projectMeta (settings, plan, state)
//	project:<name>/pool             pool index (8 bytes) → record (poolValue)
//	project:<name>/queue            pool index → queueItem (the phase awaiting labels)
//	project:<name>/groups           group number (8 bytes) → groupRecord (labelled groups)
//	project:<name>/releases         round (8 bytes) → releaseRecord
//	project:<name>/models           round → the model file (nn's format, as dpal train writes)
//	project:<name>/ledger/meta      the project's ledger (dp/ledger's layout)
//	project:<name>/ledger/entries

var bucketProjects = []byte("projects")

const (
	subPool     = "/pool"
	subQueue    = "/queue"
	subGroups   = "/groups"
	subModels   = "/models"
	projectPre  = "project:" // ':' cannot occur in a learner name
	poolIDLimit = 128        // bytes of a client's record id
)

// projectSubs are a project's buckets besides its ledger's.
var projectSubs = []string{subPool, subQueue, subGroups, subReleases, subModels}

// projectPrefix names a project's buckets.
func projectPrefix(name string) string { return projectPre + name }

// pbucket is one of project name's buckets.
func pbucket(tx kvTx, name, sub string) kvBucket {
	return tx.Bucket([]byte(projectPrefix(name) + sub))
}

// createProjectTx stores a new project and its empty buckets; errProjectExists
// if the name is taken.
func createProjectTx(tx kvTx, m projectMeta) error {
	pb, err := tx.CreateBucketIfNotExists(bucketProjects)
	if err != nil {
		return err
	}
	if pb.Get([]byte(m.Name)) != nil {
		return errProjectExists
	}
	pre := projectPrefix(m.Name)
	for _, sub := range append(projectSubs, subLedgerMeta, subLedgerLog) {
		if err := tx.DeleteBucket([]byte(pre + sub)); err != nil && !errors.Is(err, errBucketNotFound) {
			return err
		}
		if _, err := tx.CreateBucketIfNotExists([]byte(pre + sub)); err != nil {
			return err
		}
	}
	return putJSON(pb, []byte(m.Name), m)
}

// getProjectTx reads project name's settings and state.
func getProjectTx(tx kvTx, name string) (projectMeta, error) {
	var m projectMeta
	pb := tx.Bucket(bucketProjects)
	if pb == nil {
		return m, errNoProject
	}
	ok, err := getJSON(pb, []byte(name), &m)
	if err == nil && !ok {
		err = errNoProject
	}
	if err == nil && m.Plan != nil {
		m.Plan.Config = m.Config // the plan's JSON leaves its Config out
	}
	return m, err
}

// putProjectTx writes m's settings and state.
func putProjectTx(tx kvTx, m projectMeta) error {
	return putJSON(tx.Bucket(bucketProjects), []byte(m.Name), m)
}

// listProjectsTx returns every project, by name.
func listProjectsTx(tx kvTx) ([]projectMeta, error) {
	var out []projectMeta
	pb := tx.Bucket(bucketProjects)
	if pb == nil {
		return nil, nil
	}
	err := pb.ForEach(func(k, v []byte) error {
		var m projectMeta
		if err := jsonUnmarshal(v, &m); err != nil {
			return fmt.Errorf("project %s: %w", k, err)
		}
		if m.Plan != nil {
			m.Plan.Config = m.Config
		}
		out = append(out, m)
		return nil
	})
	return out, err
}

// poolValue encodes a pool record: the id's length (2 bytes), the id,
// then the features as float64 bits (little-endian), exactly as parsed.
func poolValue(id string, x []float64) []byte {
	b := make([]byte, 2+len(id)+8*len(x))
	binary.BigEndian.PutUint16(b, uint16(len(id)))
	copy(b[2:], id)
	o := 2 + len(id)
	for i, v := range x {
		binary.LittleEndian.PutUint64(b[o+8*i:], math.Float64bits(v))
	}
	return b
}

// parsePoolValue decodes a poolValue of dim features.
func parsePoolValue(b []byte, dim int) (string, []float64, error) {
	if len(b) < 2 {
		return "", nil, errors.New("pool record: truncated")
	}
	n := int(binary.BigEndian.Uint16(b))
	if len(b) != 2+n+8*dim {
		return "", nil, fmt.Errorf("pool record: %d bytes, want %d", len(b), 2+n+8*dim)
	}
	x := make([]float64, dim)
	for i := range x {
		x[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[2+n+8*i:]))
	}
	return string(b[2+n : 2+n]), x, nil
}

// poolID is the client id of a poolValue (empty if it had none).
func poolID(b []byte) string {
	if len(b) < 2 {
		return ""
	}
	n := int(binary.BigEndian.Uint16(b))
	if len(b) < 2+n {
		return ""
	}
	return string(b[2 : 2+n])
}

// appendPoolTx stores records at pool indices start, start+1, ….
func appendPoolTx(tx kvTx, name string, start int, ids []string, rows [][]float64) error {
	b := pbucket(tx, name, subPool)
	for i, x := range rows {
		if err := b.Put(ledger.Uint64Key(uint64(start+i)), poolValue(ids[i], x)); err != nil {
			return err
		}
	}
	return nil
}

// poolRecordTx reads pool record i.
func poolRecordTx(tx kvTx, name string, dim, i int) (string, []float64, error) {
	v := pbucket(tx, name, subPool).Get(ledger.Uint64Key(uint64(i)))
	if v == nil {
		return "", nil, errNoPoolRecord
	}
	_, x, err := parsePoolValue(v, dim)
	return poolID(v), x, err
}

// readPoolTx reads the whole pool, in index order: the training job's
// one copy.
func readPoolTx(tx kvTx, name string, dim, n int) ([][]float64, error) {
	out := make([][]float64, 0, n)
	err := pbucket(tx, name, subPool).ForEach(func(k, v []byte) error {
		if int(ledger.KeyUint64(k)) != len(out) {
			return fmt.Errorf("project %s: pool record %d missing", name, len(out))
		}
		_, x, err := parsePoolValue(v, dim)
		if err != nil {
			return fmt.Errorf("project %s: record %d: %w", name, len(out), err)
		}
		out = append(out, x)
		return nil
	})
	if err == nil && len(out) != n {
		err = fmt.Errorf("project %s: the pool holds %d records, want %d", name, len(out), n)
	}
	return out, err
}

// putQueueTx writes one queue item.
func putQueueTx(tx kvTx, name string, it queueItem) error {
	return putJSON(pbucket(tx, name, subQueue), ledger.Uint64Key(uint64(it.Index)), it)
}

// getQueueTx reads the queue item of pool record i.
func getQueueTx(tx kvTx, name string, i int) (queueItem, error) {
	var it queueItem
	ok, err := getJSON(pbucket(tx, name, subQueue), ledger.Uint64Key(uint64(i)), &it)
	if err == nil && !ok {
		err = errNoQueueItem
	}
	return it, err
}

// forQueueTx calls fn on every queue item after pool index after (−1:
// all), in index order, until fn returns false.
func forQueueTx(tx kvTx, name string, after int, fn func(queueItem) (bool, error)) error {
	c := pbucket(tx, name, subQueue).Cursor()
	for k, v := c.Seek(ledger.Uint64Key(uint64(after + 1))); k != nil; k, v = c.Next() {
		var it queueItem
		if err := jsonUnmarshal(v, &it); err != nil {
			return err
		}
		more, err := fn(it)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// fillQueueTx replaces the queue by the records idx of group g, open.
func fillQueueTx(tx kvTx, name string, g int, idx []int) error {
	if err := clearQueueTx(tx, name); err != nil {
		return err
	}
	for _, i := range idx {
		if err := putQueueTx(tx, name, queueItem{Index: i, Group: g, Status: statusOpen}); err != nil {
			return err
		}
	}
	return nil
}

// clearQueueTx empties the queue.
func clearQueueTx(tx kvTx, name string) error {
	pre := []byte(projectPrefix(name) + subQueue)
	if err := tx.DeleteBucket(pre); err != nil && !errors.Is(err, errBucketNotFound) {
		return err
	}
	_, err := tx.CreateBucketIfNotExists(pre)
	return err
}

// putGroupTx stores labelled group g.
func putGroupTx(tx kvTx, name string, g int, gr groupRecord) error {
	return putJSON(pbucket(tx, name, subGroups), ledger.Uint64Key(uint64(g)), gr)
}

// groupsTx reads every labelled group, in order.
func groupsTx(tx kvTx, name string) ([]groupRecord, error) {
	var out []groupRecord
	err := pbucket(tx, name, subGroups).ForEach(func(_, v []byte) error {
		var g groupRecord
		if err := jsonUnmarshal(v, &g); err != nil {
			return err
		}
		out = append(out, g)
		return nil
	})
	return out, err
}

// putReleaseTx stores release rel and its model file.
func putReleaseTx(tx kvTx, name string, rel projectRelease, model []byte) error {
	k := ledger.Uint64Key(uint64(rel.Round))
	if err := pbucket(tx, name, subModels).Put(k, model); err != nil {
		return err
	}
	return putJSON(pbucket(tx, name, subReleases), k, rel)
}

// releasesTx lists the releases, by round.
func releasesTx(tx kvTx, name string) ([]projectRelease, error) {
	out := []projectRelease{}
	err := pbucket(tx, name, subReleases).ForEach(func(_, v []byte) error {
		var r projectRelease
		if err := jsonUnmarshal(v, &r); err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

// modelTx returns round's model file (round 0: the last one) and its
// round; errNoRelease if there is none.
func modelTx(tx kvTx, name string, round int) ([]byte, int, error) {
	b := pbucket(tx, name, subModels)
	var k, v []byte
	if round == 0 {
		k, v = b.Cursor().Last()
	} else {
		k = ledger.Uint64Key(uint64(round))
		v = b.Get(k)
	}
	if v == nil {
		return nil, 0, errNoRelease
	}
	return append([]byte(nil), v...), int(ledger.KeyUint64(k)), nil
}

// openProjectLedger opens project name's ledger: a new one with budget
// (ε per record, the plan's δ) and conversion, an existing one as stored.
// Its writes check fence (the project's lease; nil in one process).
func (s *Store) openProjectLedger(name string, budget account.Budget, conv account.Conversion, fence func(kvTx) error) (*ledger.Ledger, error) {
	return ledger.Open(s.fencedLedgerStore(projectPrefix(name), fence), budget, ledger.WithConversion(conv))
}
