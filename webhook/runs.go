package webhook

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/plantstore/plantstore"
)

// A runRecord keeps the record of a named Dispatcher's run in an outbox
// that keeps them (see [WithInstance]): it renews it while the run lives,
// takes back the leases of the instance's other runs once their records
// expire, and ends the run's record as it stops.
//
// It takes back nothing until it has renewed its own record without a
// failure for as long as a record lives: by then the record of a run that
// died before this one started has expired, and a live run of the same
// instance that lost the outbox as this one did, during an outage of the
// database, has had the time to renew its record again. So a live twin's
// leases are not taken back for an outage both lived through.
type runRecord struct {
	d    *Dispatcher
	runs plantstore.OutboxRuns

	lock     *os.File  // the run lock (WithRunLock), held while the run lives, or nil
	recorded bool      // a beat succeeded
	okSince  time.Time // since when every beat succeeded, or zero after a failure
	others   int       // the instance's other runs still recorded at the last take-back, 1 before the first
	told     bool      // others were logged as live
}

// beat renews the run's record, and says so when a restart of the
// instance took the run for gone: what it held was taken back, and its
// leases are no longer its own.
func (r *runRecord) beat(ctx context.Context) {
	d := r.d
	bctx, cancel := context.WithTimeout(ctx, d.cfg.heartbeat)
	defer cancel()
	renewed, err := r.runs.Beat(bctx, d.cfg.instance, d.owner, d.cfg.heartbeat)
	if err != nil {
		d.logOutboxError(ctx, "record this run", err)
		r.okSince = time.Time{}
		return
	}
	if r.recorded && !renewed {
		d.log.LogAttrs(ctx, slog.LevelWarn, "webhook: this run was taken for gone after its record expired, and another run of this instance took back its deliveries; recorded again",
			slog.String("instance", d.cfg.instance), slog.String("owner", d.owner), slog.Duration("heartbeat", d.cfg.heartbeat))
	}
	r.recorded = true
	if r.okSince.IsZero() {
		r.okSince = time.Now()
	}
}

// mayTakeBack tells whether the run has renewed its record without a
// failure for as long as a record lives.
func (r *runRecord) mayTakeBack(now time.Time) bool {
	return !r.okSince.IsZero() && now.Sub(r.okSince) >= r.d.cfg.heartbeat
}

// takeBack takes back the leases of the instance's other runs whose
// records expired. The others it leaves are live runs of the same name,
// and that is logged, once.
func (r *runRecord) takeBack(ctx context.Context) {
	d := r.d
	n, others, err := r.runs.TakeBack(ctx, d.cfg.instance, d.owner)
	if err != nil {
		d.log.LogAttrs(ctx, slog.LevelWarn, "webhook: could not take back the deliveries of this instance's previous run; they wait for their leases, or the next try",
			slog.String("instance", d.cfg.instance), slog.Any("err", err))
		return
	}
	if n > 0 {
		d.log.LogAttrs(ctx, slog.LevelInfo, "webhook: took back the deliveries this instance's previous run held",
			slog.String("instance", d.cfg.instance), slog.String("owner", d.owner), slog.Int("deliveries", n))
		for _, s := range d.subs {
			s.notify()
		}
	}
	if others > 0 && !r.told {
		d.log.LogAttrs(ctx, slog.LevelInfo, "webhook: other live runs share this instance's name; each keeps its own deliveries",
			slog.String("instance", d.cfg.instance), slog.Int("runs", others))
		r.told = true
	}
	r.others = others
}

// keep renews the run's record every third of the heartbeat until ctx
// ends, and, once it may, takes back the leases of the instance's other
// runs while some are recorded.
func (r *runRecord) keep(ctx context.Context) {
	t := time.NewTicker(max(r.d.cfg.heartbeat/3, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.beat(ctx)
		if r.others > 0 && r.mayTakeBack(time.Now()) {
			r.takeBack(ctx)
		}
	}
}

// end hands back whatever the run still holds and removes its record,
// even as ctx ends, then releases the run lock, and removes its file once
// the run has ended. Should it fail, a restart of the instance takes back
// what the run held at once, by the run lock, or once the record expires.
func (r *runRecord) end(ctx context.Context) {
	d := r.d
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.attemptTimeout)
	defer cancel()
	_, err := r.runs.EndRun(ctx, d.owner)
	if err != nil {
		d.log.LogAttrs(ctx, slog.LevelWarn, "webhook: could not end this run's record; a restart of this instance takes back what it held once the record expires",
			slog.String("instance", d.cfg.instance), slog.Any("err", err))
	}
	if r.lock != nil {
		if err == nil {
			// Ended: the file has nothing left to tell the next run. Should
			// it start meanwhile and lock this file, or make a new one, it
			// learns nothing wrong either way.
			os.Remove(d.cfg.runLock)
		}
		r.lock.Close() // otherwise the next run finds this owner, gone
	}
}

// errRunLocked is lockRunFile's error while another run holds the lock.
var errRunLocked = errors.New("webhook: another live run of this instance holds the run lock")

// maxRunFile bounds what is read of a run lock file: an owner is an
// instance name and a run id.
const maxRunFile = 4096

// lockRun takes the run lock of [WithRunLock], when set, and, when the
// run that held it last was one of this instance's, ends that run in the
// outbox: its lock ended with its process, so it is gone, whatever its
// record says.
func (r *runRecord) lockRun(ctx context.Context) {
	d := r.d
	if d.cfg.runLock == "" {
		return
	}
	prev, f, err := lockRunFile(d.cfg.runLock, d.owner)
	if err != nil {
		d.log.LogAttrs(ctx, slog.LevelDebug, "webhook: no run lock: a previous run of this instance is taken for gone only once its record expires",
			slog.String("file", d.cfg.runLock), slog.Any("err", err))
		return
	}
	r.lock = f
	if prev == "" || prev == d.owner || !strings.HasPrefix(prev, d.cfg.instance+runSep) {
		return
	}
	ectx, cancel := context.WithTimeout(ctx, d.cfg.attemptTimeout)
	defer cancel()
	n, err := r.runs.EndRun(ectx, prev)
	switch {
	case err != nil:
		d.log.LogAttrs(ctx, slog.LevelWarn, "webhook: could not take back the deliveries of this instance's previous run; they wait for its record to expire",
			slog.String("instance", d.cfg.instance), slog.String("previous", prev), slog.Any("err", err))
	case n > 0:
		d.log.LogAttrs(ctx, slog.LevelInfo, "webhook: took back the deliveries this instance's previous run held",
			slog.String("instance", d.cfg.instance), slog.String("owner", d.owner), slog.String("previous", prev),
			slog.Int("deliveries", n), slog.String("known_gone_by", "run lock"))
	}
}
