package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"strings"
)

// bbolt maps its file into memory and trusts what it reads there: a file
// cut short makes it fault (SIGBUS) on the first page past the end, and a
// page pointer changed on disk makes it read out of bounds, loop or
// panic. So OpenFile and OpenFileReadOnly first read the file with plain
// reads and check, against bbolt's on-disk format (version 2), everything
// bbolt will follow: the header (meta) pages and their checksums, that
// the file holds every page below the high-water mark they state, and
// every page reachable from the root bucket and the freelist (in bounds,
// of the right type, elements inside their page, no page reached twice,
// so no cycle). A file that passes can be read by bbolt without faulting;
// one that fails gets an error saying what is wrong.

// The on-disk format (go.etcd.io/bbolt/internal/common), in the byte
// order of the machine that wrote it.
const (
	boltMagic        = 0xED0CDAED
	boltVersion      = 2
	pageHeaderSize   = 16 // id u64, flags u16, count u16, overflow u32
	elementSize      = 16 // a branch's pos, ksize, pgid; a leaf's flags, pos, ksize, vsize
	metaSize         = 64 // magic, version, pageSize, flags, root{pgid, seq}, freelist, pgid, txid, checksum
	branchPage       = 0x01
	leafPage         = 0x02
	freelistPage     = 0x10
	bucketLeafFlag   = 0x01
	bucketHeaderSize = 16 // root u64, sequence u64
	noFreelist       = ^uint64(0)
	minPageSize      = 1024
	maxPageSize      = 1 << 24
	maxTreeDepth     = 64 // far above any real tree's: a B+tree of 2^64 keys is shallower
)

var native = binary.NativeEndian

// boltMeta is a decoded header page.
type boltMeta struct {
	pageSize           uint64
	root, freelist     uint64
	highWater, txid    uint64
	valid              bool
	magicOK, versionOK bool
}

func readMeta(b []byte) boltMeta {
	if len(b) < metaSize {
		return boltMeta{}
	}
	m := boltMeta{
		pageSize: uint64(native.Uint32(b[8:])), root: native.Uint64(b[16:]), freelist: native.Uint64(b[32:]),
		highWater: native.Uint64(b[40:]), txid: native.Uint64(b[48:]),
		magicOK: native.Uint32(b[0:]) == boltMagic, versionOK: native.Uint32(b[4:]) == boltVersion,
	}
	h := fnv.New64a()
	h.Write(b[:56])
	m.valid = m.magicOK && m.versionOK && h.Sum64() == native.Uint64(b[56:])
	return m
}

// errNotBolt is the error for a file that is not a bbolt file at all.
var errNotBolt = errors.New("not a ledger file: it does not start with a bbolt header")

// checkFile checks the file at path before bbolt opens it (see above),
// holding the lock bbolt will take (shared to read, exclusive for a run)
// while it reads; another process's lock makes it wait, then fail with
// ErrLocked. A missing or empty file passes for a run (bbolt creates and
// initialises it) and fails for a read-only open. The error says what is
// wrong, not which file: the caller names it.
func checkFile(path string, readOnly bool) error {
	return checkBolt(path, readOnly, true)
}

// CheckBoltFile checks a bbolt file that need not hold a ledger — dpal
// serve's store, whose ledgers are buckets among others — the way a
// ledger file is checked before bbolt maps it (the header, every page the
// tree and the freelist reach, under bbolt's exclusive lock), so that a cut
// or damaged file is an error, never a SIGBUS. A missing or empty file
// passes (bbolt creates and initialises it). The error does not name the
// file: the caller does.
func CheckBoltFile(path string) error { return checkBolt(path, false, false) }

// checkBolt is checkFile; ledgerOnly also requires that the root bucket
// holds nothing but a ledger's buckets.
func checkBolt(path string, readOnly, ledgerOnly bool) error {
	f, err := os.Open(path)
	var pe *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist) && !readOnly:
		return nil
	case errors.As(err, &pe):
		return pe.Err
	case err != nil:
		return err
	}
	defer f.Close() // and releases the lock
	// Under the lock bbolt will take: a file another process is writing
	// is in use, not damaged.
	if err := lockFile(f, !readOnly, lockTimeout); err != nil {
		return err
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return errors.New("not a regular file")
	case fi.Size() == 0 && readOnly:
		return errors.New("the file is empty: not a ledger")
	case fi.Size() == 0:
		return nil
	}
	c := &fileCheck{r: f, size: uint64(fi.Size()), ledgerOnly: ledgerOnly}
	if err := c.header(); err != nil {
		return err
	}
	return c.tree()
}

// fileCheck walks one file.
type fileCheck struct {
	r     io.ReaderAt
	size  uint64
	ps    uint64 // page size
	meta  boltMeta
	seen  map[uint64]bool // pages reached, tree and freelist
	other []string        // what the root bucket holds besides a ledger's two buckets
	// ledgerOnly refuses a file whose root bucket holds other buckets.
	ledgerOnly bool
}

// read returns n bytes at off, or an error if the file is shorter.
func (c *fileCheck) read(off, n uint64) ([]byte, error) {
	if off > c.size || n > c.size-off {
		return nil, fmt.Errorf("the file is cut short: %d bytes, but it needs %d", c.size, off+n)
	}
	b := make([]byte, n)
	if _, err := c.r.ReadAt(b, int64(off)); err != nil {
		return nil, err
	}
	return b, nil
}

// header finds the page size and the header page bbolt will use (the
// valid one with the larger transaction id, the first on a tie), and
// checks that the file holds every page below its high-water mark.
func (c *fileCheck) header() error {
	if c.size < pageHeaderSize+8 {
		return fmt.Errorf("not a ledger file: %d bytes, too few for a bbolt header", c.size)
	}
	first, _ := c.read(0, min(c.size, pageHeaderSize+metaSize))
	m0 := readMeta(first[pageHeaderSize:])
	if native.Uint32(first[pageHeaderSize:]) != boltMagic {
		return errNotBolt
	}
	c.ps = m0.pageSize
	if !m0.valid {
		// Like bbolt, look for the second header page at each page size.
		c.ps = 0
		for ps := uint64(minPageSize); ps <= maxPageSize && ps+pageHeaderSize+metaSize <= c.size; ps *= 2 {
			b, _ := c.read(ps+pageHeaderSize, metaSize)
			if m := readMeta(b); m.valid && m.pageSize == ps {
				c.ps = ps
				break
			}
		}
		if c.ps == 0 {
			if c.size < pageHeaderSize+metaSize {
				return fmt.Errorf("the file is cut short: %d bytes, too few for a bbolt header", c.size)
			}
			return errors.New("damaged: no header page passes its checksum")
		}
	}
	if c.ps < minPageSize || c.ps > maxPageSize || c.ps&(c.ps-1) != 0 {
		return fmt.Errorf("damaged: page size %d", c.ps)
	}
	if c.size < 2*c.ps {
		return fmt.Errorf("the file is cut short: %d bytes, fewer than its two header pages of %d", c.size, c.ps)
	}
	var metas [2]boltMeta
	for i := range metas {
		b, _ := c.read(uint64(i)*c.ps+pageHeaderSize, metaSize)
		if metas[i] = readMeta(b); metas[i].pageSize != c.ps {
			metas[i].valid = false
		}
	}
	switch {
	case metas[0].valid && (!metas[1].valid || metas[1].txid <= metas[0].txid):
		c.meta = metas[0]
	case metas[1].valid:
		c.meta = metas[1]
	default:
		return errors.New("damaged: no header page passes its checksum")
	}
	hw := c.meta.highWater
	if hw < 3 || hw > c.size/c.ps {
		if hw >= 3 && hw <= (1<<62)/c.ps {
			return fmt.Errorf("the file is cut short: %d bytes, but its header says it holds %d pages of %d bytes (%d bytes)",
				c.size, hw, c.ps, hw*c.ps)
		}
		return fmt.Errorf("damaged: the header's high-water mark is page %d", hw)
	}
	return nil
}

// tree checks every page reachable from the root bucket and the
// freelist, and that the root bucket holds nothing but a ledger's
// buckets.
func (c *fileCheck) tree() error {
	c.seen = map[uint64]bool{}
	if err := c.bucket(c.meta.root, 0, true); err != nil {
		return err
	}
	if err := c.freelist(); err != nil {
		return err
	}
	if other := c.other; len(other) > 0 && c.ledgerOnly {
		if len(other) > 5 {
			other = append(other[:5], "…")
		}
		return fmt.Errorf("not a ledger file: a bbolt database that holds %s (a dpal serve store, or another program's)", strings.Join(other, ", "))
	}
	return nil
}

// page reads the page id with its overflow pages, checking that it is
// below the high-water mark, names itself id and was not reached before.
func (c *fileCheck) page(id uint64) ([]byte, error) {
	if id < 2 || id >= c.meta.highWater {
		return nil, fmt.Errorf("damaged: a pointer to page %d, outside pages 2 to %d", id, c.meta.highWater-1)
	}
	head, err := c.read(id*c.ps, pageHeaderSize)
	if err != nil {
		return nil, err
	}
	if got := native.Uint64(head); got != id {
		return nil, fmt.Errorf("damaged: page %d calls itself page %d", id, got)
	}
	n := uint64(native.Uint32(head[12:])) + 1
	if n > c.meta.highWater-id {
		return nil, fmt.Errorf("damaged: page %d runs past the high-water mark", id)
	}
	for i := range n {
		if c.seen[id+i] {
			return nil, fmt.Errorf("damaged: page %d is reached twice", id+i)
		}
		c.seen[id+i] = true
	}
	return c.read(id*c.ps, n*c.ps)
}

// bucket checks the bucket whose B+tree starts at page id.
func (c *fileCheck) bucket(id uint64, depth int, root bool) error {
	if depth > maxTreeDepth {
		return errors.New("damaged: the tree is deeper than any real one")
	}
	p, err := c.page(id)
	if err != nil {
		return err
	}
	switch flags := native.Uint16(p[8:]); flags {
	case leafPage:
		return c.leaf(p, depth, root)
	case branchPage:
	default:
		return fmt.Errorf("damaged: page %d has type %#x, not a branch or a leaf", id, flags)
	}
	n := uint64(native.Uint16(p[10:]))
	if n == 0 || pageHeaderSize+n*elementSize > uint64(len(p)) {
		return fmt.Errorf("damaged: branch page %d has %d elements", id, n)
	}
	for i := range n {
		e := pageHeaderSize + i*elementSize
		pos, ksize := uint64(native.Uint32(p[e:])), uint64(native.Uint32(p[e+4:]))
		if e+pos+ksize > uint64(len(p)) {
			return fmt.Errorf("damaged: branch page %d: element %d lies outside the page", id, i)
		}
		if err := c.bucket(native.Uint64(p[e+8:]), depth+1, root); err != nil {
			return err
		}
	}
	return nil
}

// leaf checks a leaf page p (a page of the file, or an inline bucket's):
// its elements lie inside it, and each nested bucket is whole. For the
// root bucket it records the names that are not a ledger's buckets.
func (c *fileCheck) leaf(p []byte, depth int, root bool) error {
	if len(p) < pageHeaderSize {
		return errors.New("damaged: an inline bucket is shorter than a page header")
	}
	id := native.Uint64(p)
	n := uint64(native.Uint16(p[10:]))
	if pageHeaderSize+n*elementSize > uint64(len(p)) {
		return fmt.Errorf("damaged: leaf page %d has %d elements, more than fit", id, n)
	}
	for i := range n {
		e := pageHeaderSize + i*elementSize
		flags, pos := native.Uint32(p[e:]), uint64(native.Uint32(p[e+4:]))
		ksize, vsize := uint64(native.Uint32(p[e+8:])), uint64(native.Uint32(p[e+12:]))
		if flags&^bucketLeafFlag != 0 || e+pos+ksize+vsize > uint64(len(p)) {
			return fmt.Errorf("damaged: leaf page %d: element %d lies outside the page", id, i)
		}
		if k := string(p[e+pos : e+pos+ksize]); root && (flags != bucketLeafFlag || k != string(bucketMeta) && k != string(bucketEntries)) {
			c.other = append(c.other, fmt.Sprintf("%q", k))
		}
		if flags&bucketLeafFlag == 0 {
			continue
		}
		v := p[e+pos+ksize : e+pos+ksize+vsize]
		if len(v) < bucketHeaderSize {
			return fmt.Errorf("damaged: leaf page %d: element %d is a bucket without a header", id, i)
		}
		var err error
		if r := native.Uint64(v); r != 0 {
			err = c.bucket(r, depth+1, false)
		} else if inline := v[bucketHeaderSize:]; len(inline) < pageHeaderSize || native.Uint16(inline[8:]) != leafPage {
			err = fmt.Errorf("damaged: leaf page %d: element %d is an inline bucket without a leaf page", id, i)
		} else {
			err = c.leaf(inline, depth+1, false)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// freelist checks the freelist page and that the pages it lists are
// distinct, below the high-water mark and not in the tree.
func (c *fileCheck) freelist() error {
	id := c.meta.freelist
	if id == noFreelist {
		return nil
	}
	p, err := c.page(id)
	if err != nil {
		return err
	}
	if native.Uint16(p[8:]) != freelistPage {
		return fmt.Errorf("damaged: the freelist's page %d is not a freelist page", id)
	}
	n, at := uint64(native.Uint16(p[10:])), uint64(pageHeaderSize)
	if n == 0xFFFF { // the count overflows into the first element
		if len(p) < pageHeaderSize+8 {
			return errors.New("damaged: the freelist page is too short")
		}
		n, at = native.Uint64(p[pageHeaderSize:]), pageHeaderSize+8
	}
	if n > (uint64(len(p))-at)/8 {
		return fmt.Errorf("damaged: the freelist lists %d pages, more than its page holds", n)
	}
	free := make([]uint64, n)
	for i := range free {
		free[i] = native.Uint64(p[at+uint64(i)*8:])
	}
	for _, f := range free {
		if f < 2 || f >= c.meta.highWater || c.seen[f] {
			return fmt.Errorf("damaged: the freelist lists page %d, which is in use or out of range", f)
		}
		c.seen[f] = true // a repeat shows as in use
	}
	return nil
}
