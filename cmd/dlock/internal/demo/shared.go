package demo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/redis/go-redis/v9"
)

// Exports that must not all run at once: a semaphore of 3 permits lets 8
// instances through, never more than 3 at a time.
const (
	exportInstances = 8
	exportLimit     = 3
	exportTakes     = 30 * time.Millisecond
	exportTTL       = 10 * time.Second
)

func limitedExports(ctx context.Context, d *env) result {
	sem := d.locker.Semaphore(d.key("exports"), exportLimit)
	var running, most, done atomic.Int64
	errs := make(chan error, exportInstances)
	var wg sync.WaitGroup
	for range exportInstances {
		wg.Go(func() {
			errs <- sem.Do(ctx, exportTTL, func(ctx context.Context) error {
				n := running.Add(1)
				raiseTo(&most, n)
				defer running.Add(-1)
				done.Add(1)
				return sleep(ctx, exportTakes)
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return failed(err)
		}
	}
	happened := fmt.Sprintf("%d instances export, limit %d permits\n%d exports ran, at most %d at once", exportInstances, exportLimit, done.Load(), most.Load())
	var problems []string
	if most.Load() > exportLimit {
		problems = append(problems, fmt.Sprintf("%d exports ran at once", most.Load()))
	}
	if done.Load() != exportInstances {
		problems = append(problems, fmt.Sprintf("%d of %d exports ran", done.Load(), exportInstances))
	}
	return verdict(happened, fmt.Sprintf("never more than %d at once", exportLimit), problems)
}

// A document many read and one rewrites: readers share an RW lock's read
// side, the writer takes its write side, between two fields it writes
// apart. No reader sees a half-written document, and the stream of
// readers does not keep the writer out.
const (
	docReaders = 6
	docWrites  = 3
	docTTL     = 10 * time.Second
	docPause   = 5 * time.Millisecond // the writer's pause between the two fields
)

func readersAndWriter(ctx context.Context, d *env) result {
	rw := d.locker.RWMutex(d.key("doc:lock"))
	doc := d.key("doc")
	defer d.cleanup(ctx, doc)
	if err := d.rdb.HSet(ctx, doc, "title", "v0", "body", "v0").Err(); err != nil {
		return failed(err)
	}
	readCtx, stopReading := context.WithCancel(ctx)
	var reads, torn atomic.Int64
	readErrs := make(chan error, docReaders)
	var wg sync.WaitGroup
	for range docReaders {
		wg.Go(func() {
			for readCtx.Err() == nil {
				err := rw.RDo(readCtx, docTTL, func(ctx context.Context) error {
					v, err := d.rdb.HMGet(ctx, doc, "title", "body").Result()
					if err == nil && v[0] != v[1] {
						torn.Add(1)
					}
					reads.Add(1)
					return err
				})
				if err != nil && readCtx.Err() == nil {
					readErrs <- err
					return
				}
			}
		})
	}
	writeErr := writeDoc(ctx, d.rdb, rw.Do, doc)
	stopReading()
	wg.Wait()
	close(readErrs)
	if writeErr != nil {
		return failed(writeErr)
	}
	if err := <-readErrs; err != nil && !errors.Is(err, context.Canceled) {
		return failed(err)
	}
	happened := fmt.Sprintf("%d readers read on, a writer rewrites %d times\n%d reads, %d of them torn", docReaders, docWrites, reads.Load(), torn.Load())
	var problems []string
	if torn.Load() > 0 {
		problems = append(problems, fmt.Sprintf("%d reads saw a half-written document", torn.Load()))
	}
	return verdict(happened, "no torn read, writer not starved", problems)
}

// writeDoc rewrites doc docWrites times under the write side of an RW
// lock, title first and body a moment later.
func writeDoc(ctx context.Context, rdb *redis.Client, under func(context.Context, time.Duration, func(context.Context) error, ...dlock.DoOption) error, doc string) error {
	for i := 1; i <= docWrites; i++ {
		v := fmt.Sprintf("v%d", i)
		err := under(ctx, docTTL, func(ctx context.Context) error {
			if err := rdb.HSet(ctx, doc, "title", v).Err(); err != nil {
				return err
			}
			if err := sleep(ctx, docPause); err != nil {
				return err
			}
			return rdb.HSet(ctx, doc, "body", v).Err()
		})
		if err != nil {
			return fmt.Errorf("write %d: %w", i, err)
		}
	}
	return nil
}

// raiseTo raises m to n if n is larger, as several goroutines count.
func raiseTo(m *atomic.Int64, n int64) {
	for old := m.Load(); n > old && !m.CompareAndSwap(old, n); old = m.Load() {
		continue // another goroutine raised it meanwhile: look again
	}
}
