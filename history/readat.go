package history

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/lockbench/lockbench/internal/hugepage"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
)

// Why a second reader: `lockbench check` on a 10-million-event history
// (~870 MB) spent most of its time decoding on one core, and held the
// events twice while joining the chunks Read gathers. A file can be read
// at any offset, so readAt first finds its lines (one pass that only
// counts newlines), makes the event slice at its final size, and then
// decodes blocks of lines on every core, each straight into its place.
// Every line is decoded by decodeEvent, as Read decodes it, and the
// errors are Read's: the first bad line's, by line number.

// blockSize is how many bytes of lines a worker decodes at a time; a block
// always holds a whole line of maxLine bytes.
const blockSize = 4 << 20

// lineBlock is a run of whole lines: bytes [off, end) of the file, lines
// first (1-based) to first+lines-1.
type lineBlock struct {
	off, end int64
	first    int
	lines    int
}

// lineIndex is the first pass: the blocks, and the first line longer than
// maxLine (0: none), which the blocks stop before.
type lineIndex struct {
	blocks  []lineBlock
	lines   int
	tooLong int
}

// indexLines reads r (sequentially; size bytes are expected) and cuts it
// into blocks of about bs bytes that end at line ends.
func indexLines(r io.Reader, size int64, bs int) (lineIndex, error) {
	var ix lineIndex
	buf := make([]byte, max(min(int64(bs), size), 1)) // no more than the file
	var pos int64                                     // file offset of buf[0]
	var start int64                                   // where the current block starts
	var lineAt int64                                  // where the current line starts
	lines, first := 0, 1
	for {
		n, err := io.ReadFull(r, buf)
		data := buf[:n]
		for i := 0; ; {
			j := bytes.IndexByte(data[i:], '\n')
			if j < 0 {
				break
			}
			end := pos + int64(i+j)
			if end-lineAt >= maxLine {
				ix.tooLong = ix.lines + lines + 1
				ix.close(start, lineAt, first, lines)
				return ix, nil
			}
			lines++
			lineAt = end + 1
			i += j + 1
		}
		pos += int64(n)
		if pos-lineAt >= maxLine { // a line that has not ended yet is too long
			ix.tooLong = ix.lines + lines + 1
			ix.close(start, lineAt, first, lines)
			return ix, nil
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			if pos > lineAt { // a last line without a newline
				lines++
				lineAt = pos
			}
			ix.close(start, lineAt, first, lines)
			return ix, nil
		}
		if err != nil {
			return ix, err
		}
		if lineAt-start >= int64(bs) {
			ix.close(start, lineAt, first, lines)
			start, first, lines = lineAt, first+lines, 0
		}
	}
}

// close ends the block [start, end) of lines first.. if it holds any.
func (ix *lineIndex) close(start, end int64, first, lines int) {
	if lines > 0 {
		ix.blocks = append(ix.blocks, lineBlock{off: start, end: end, first: first, lines: lines})
		ix.lines += lines
	}
}

// rangeStat is what indexRanges learns of one range of bs bytes.
type rangeStat struct {
	newlines    int
	first, last int  // offsets in the range of its first and last '\n'; -1: none
	gap         bool // it may hold a line of maxLine bytes or more
	err         error
}

// indexRanges is indexLines's result found on every core, for the common
// case: it cuts the file into ranges of bs bytes, counts each range's
// newlines (bytes.Count, not a search per line), and makes one block of
// the lines that end in each range. ok is false, and indexLines must do
// the work, when a line might be maxLine bytes or longer (the error needs
// its exact line), when a read fails, or when bs is below maxLine.
func indexRanges(f io.ReaderAt, size int64, bs int) (lineIndex, bool) {
	if bs < maxLine || size <= 0 {
		return lineIndex{}, false
	}
	stats := make([]rangeStat, (size+int64(bs)-1)/int64(bs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(stats)) {
		wg.Go(func() {
			buf := make([]byte, min(int64(bs), size))
			for r := int(next.Add(1) - 1); r < len(stats); r = int(next.Add(1) - 1) {
				stats[r] = statRange(f, int64(r)*int64(bs), min(int64(bs), size-int64(r)*int64(bs)), buf)
			}
		})
	}
	wg.Wait()
	var ix lineIndex
	prevEnd := int64(0) // the end of the last block: just after a newline
	for r, st := range stats {
		off := int64(r) * int64(bs)
		if st.err != nil || st.gap || st.first < 0 || off+int64(st.first)-prevEnd >= maxLine {
			return lineIndex{}, false
		}
		end := off + int64(st.last) + 1
		ix.close(prevEnd, end, ix.lines+1, st.newlines)
		prevEnd = end
	}
	if tail := size - prevEnd; tail >= maxLine {
		return lineIndex{}, false
	} else if tail > 0 { // a last line without a newline
		ix.close(prevEnd, size, ix.lines+1, 1)
	}
	return ix, true
}

// statRange reads the n bytes at off into buf and counts their lines.
// A line of maxLine bytes or more holds an aligned window of maxLine/2
// bytes with no newline in it, so looking for one newline per window
// finds every such line (gap), and a few more that are not (a line of
// maxLine/2 bytes may span a window), for indexLines to tell apart.
func statRange(f io.ReaderAt, off, n int64, buf []byte) rangeStat {
	data := buf[:n]
	if _, err := f.ReadAt(data, off); err != nil {
		return rangeStat{err: err}
	}
	st := rangeStat{newlines: bytes.Count(data, []byte{'\n'}), first: bytes.IndexByte(data, '\n'), last: bytes.LastIndexByte(data, '\n')}
	const h = maxLine / 2
	for w := 0; w+h <= len(data); w += h {
		if bytes.IndexByte(data[w:w+h], '\n') < 0 {
			st.gap = true
			break
		}
	}
	return st
}

// readAt decodes the history of size bytes in f on every core (see the
// top of this file). Its events and errors are Read's.
func readAt(f io.ReaderAt, size int64, bs int) ([]Event, error) {
	ix, ok := indexRanges(f, size, bs)
	if !ok {
		var err error
		if ix, err = indexLines(io.NewSectionReader(f, 0, size), size, bs); err != nil {
			return nil, err
		}
	}
	events := hugepage.Make[Event](ix.lines, ix.lines)
	var (
		next    atomic.Int64 // the next block to decode
		stopAt  atomic.Int64 // blocks from this one on need no decoding
		wg      sync.WaitGroup
		errs    = make([]error, len(ix.blocks))
		blanks  atomic.Int64
		workers = min(runtime.GOMAXPROCS(0), len(ix.blocks))
	)
	stopAt.Store(int64(len(ix.blocks)))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			var d decoder
			for {
				k := next.Add(1) - 1
				if k >= stopAt.Load() {
					return
				}
				b := ix.blocks[k]
				nb, err := d.decodeBlock(f, b, &buf, events[b.first-1:b.first-1+b.lines])
				blanks.Add(int64(nb))
				if err != nil {
					errs[k] = err
					for s := stopAt.Load(); k < s && !stopAt.CompareAndSwap(s, k); s = stopAt.Load() {
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if ix.tooLong > 0 {
		return nil, &LineError{Line: ix.tooLong, Err: fmt.Errorf("line longer than %d bytes", maxLine)}
	}
	if blanks.Load() > 0 {
		events = dropBlanks(events)
	}
	if len(events) == 0 {
		return nil, ErrEmpty
	}
	return events, nil
}

// decodeBlock reads block b of f into *buf and decodes its lines into
// out, one event per line; a blank line leaves its event zero (Type 0,
// which no decoded event has) and is counted.
func (d *decoder) decodeBlock(f io.ReaderAt, b lineBlock, buf *[]byte, out []Event) (blank int, err error) {
	n := int(b.end - b.off)
	if cap(*buf) < n {
		*buf = make([]byte, n)
	}
	data := (*buf)[:n]
	if _, err := f.ReadAt(data, b.off); err != nil {
		if errors.Is(err, io.EOF) {
			return 0, errChanged
		}
		return 0, err
	}
	// Write to each event before decoding into it: the fresh slice's
	// pages are not yet mapped, and the first access to a page that is a
	// read (the GC's write barrier reads the pointers it overwrites) maps
	// the zero page, which the write then copies, flushing every core's
	// TLB: on this project's VM that doubled the time of reading.
	for k := range out {
		out[k].Time = 0
	}
	for k := range out {
		line := data
		if j := bytes.IndexByte(data, '\n'); j >= 0 {
			line, data = data[:j], data[j+1:]
		} else if k != len(out)-1 {
			return blank, errChanged
		} else {
			data = nil
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			blank++
			continue
		}
		if err := d.decode(line, &out[k]); err != nil {
			return blank, &LineError{Line: b.first + k, Err: err}
		}
	}
	if len(data) != 0 {
		return blank, errChanged
	}
	return blank, nil
}

// errChanged is a file whose lines are not where the first pass found
// them: something wrote to it while it was read.
var errChanged = errors.New("the file changed while it was read")

// dropBlanks removes the zero events that blank lines left, in place.
func dropBlanks(events []Event) []Event {
	w := 0
	for i := range events {
		if events[i].Type != 0 {
			events[w] = events[i]
			w++
		}
	}
	clear(events[w:])
	return events[:w]
}
