package bench

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// The flatness rules: how much each quantity may grow from the second
// fifth of the soak to the last and still count as flat.
var (
	rssRule = flatRule{Rel: 0.25, Abs: 16}
	fdRule  = flatRule{Rel: 0.25, Abs: 16}
	goRule  = flatRule{Rel: 0.25, Abs: 50}
)

// series puts the soak's series in the report and draws its plot: what
// a soak whose end checks failed still reports (its half hour of samples
// is what shows why).
func (k *soak) series() error {
	k.s.Series = k.sampler.order
	if k.cfg.Plot == "" {
		return nil
	}
	return plotSoak(k.cfg.Plot, k.s, k.cfg.SoakDuration, k.cfg.SoakKills)
}

// report writes the soak's figures, notes, series and plot.
func (k *soak) report() error {
	s, d := k.s, k.cfg.SoakDuration
	if err := k.series(); err != nil {
		return err
	}
	s.add("soak", d.Minutes(), "min")
	s.atLeast("nodes killed (SIGKILL)", float64(k.killed), "", float64(k.cfg.SoakKills))
	s.atLeast("restarts that rejoined (ready within 90 s)", float64(k.rejoined), "", float64(k.cfg.SoakKills))
	judgeNodes(s, d.Seconds())
	for i, l := range k.lags {
		if l == noLag {
			s.unmet(nodeName(i)+" read-model lag after the load: not read", "read")
			continue
		}
		s.atMost(nodeName(i)+" read-model lag after the load", l, "events", 0)
	}
	created := 0
	for _, r := range k.runs {
		created += len(r)
	}
	l := k.load
	s.add("runs created", float64(created), "runs")
	s.add("reads answered", float64(l.reads.Load()), "reads")
	s.add("streams followed to their run's end", float64(l.followed.Load()), "streams")
	s.add("runs canceled through the API", float64(l.canc.Load()), "runs")
	s.add("client errors (retried on another node, or counted)", float64(l.errs.total()), "errors")
	s.atMost("runs not terminal after the drain (stuck)", float64(len(k.stuck)), "runs", 0)
	s.atMost("streams still open after their runs ended", float64(k.streamsOpen), "streams", 0)
	s.atMost("accounts whose balance, statement or held runs disagree", float64(len(k.money.wrong)), "accounts", 0)
	k.auditFigures(created)
	k.notes()
	return nil
}

// auditFigures compares the audit's replay of the log with the API.
func (k *soak) auditFigures(created int) {
	s, sum, m := k.s, k.audit, k.money
	if sum == nil {
		s.note("apprun audit gave no summary: %v", k.auditErr)
		s.atMost("apprun audit problems", 1, "", 0)
		return
	}
	p := problems(sum)
	found := len(p)
	if k.auditErr != nil && found == 0 {
		found = 1
	}
	if found > 0 {
		s.note("apprun audit: %v; %s", k.auditErr, strings.Join(p[:min(len(p), 5)], "; "))
	}
	s.add("events in the log", float64(sum.Events), "events")
	s.atMost("runs unfinished in the log (audit)", float64(sum.Runs.Unfinished), "runs", 0)
	s.atMost("runs the API lists ≠ runs in the log", abs(float64(created-sum.Runs.All)), "runs", 0)
	c := sum.Credits
	s.atMost("API balances ≠ the log's grants − charges + refunds", abs(float64(m.balances-(c.Granted-c.Charged+c.Refunded))), "credits", 0)
	s.atMost("statements' grants, charges, refunds ≠ the log's",
		abs(float64(m.granted-c.Granted))+abs(float64(m.charged-c.Charged))+abs(float64(m.refunded-c.Refunded)), "credits", 0)
	s.atMost("apprun audit problems", float64(found), "", 0)
}

// judgeNodes adds each node's flatness verdicts, its largest read-model
// lag during the load and its log's size at the end.
func judgeNodes(s *Scenario, span float64) {
	for _, se := range s.Series {
		var rule flatRule
		switch se.Name {
		case qRSS:
			rule = rssRule
		case qFDs:
			rule = fdRule
		case qGo:
			rule = goRule
		case qLag:
			top := 0.0
			for i, v := range se.V {
				if se.T[i] <= span {
					top = max(top, v)
				}
			}
			s.add(se.Node+" read-model lag, largest", top, "events")
			continue
		case qHeap, qFile: // no rule of their own: they say what the RSS is made of
			if f := judgeFlat(se, span, rssRule); f.Judged {
				s.add(se.Node+" "+se.Name+", 2nd fifth (median)", f.Start, se.Unit)
				s.add(se.Node+" "+se.Name+", last fifth (median)", f.End, se.Unit)
			}
			continue
		case qLog:
			if n := len(se.V); n > 0 {
				s.add(se.Node+" log on disk at the end", se.V[n-1], "MiB")
			}
			continue
		}
		f := judgeFlat(se, span, rule)
		if !f.Judged {
			s.unmet(se.Node+" "+se.Name+": not sampled in the second or the last fifth", "sampled")
			continue
		}
		s.add(se.Node+" "+se.Name+", 2nd fifth (median)", f.Start, se.Unit)
		s.atMost(se.Node+" "+se.Name+", last fifth (median)", f.End, se.Unit, round1(f.Start+f.Allowed))
	}
}

// notes says how the soak ran and what its clients met.
func (k *soak) notes() {
	s, cfg, l := k.s, k.cfg, k.load
	s.note("3 nodes (child processes) on one JetStream cluster, streams R3; %s of load: %d creators (one create a second each) over %d accounts, on the nodes in turn, and %d readers (a run or an account, %d a second each); runs: %s; no run longer than %s (half the time between kills: one killed starts again from the start) or than the load has left",
		cfg.SoakDuration, soakCreators, soakAccounts, soakReaders, int(time.Second/soakReadEvery), l.mix(), l.longest.Round(time.Second))
	s.note("a node killed with SIGKILL every %s, round robin, the first %s in, restarted on its data directory (same route and NATS client port, a new HTTP port) after %s; clients send what a node did not answer to the next (creates with one Idempotency-Key), streams resume there with Last-Event-ID",
		k.every.Round(time.Second), (k.every / 2).Round(time.Second), k.down())
	s.note("flat: the median of a node's samples in the last fifth of the soak against the median in its second fifth (the first is warm-up): RSS %s MiB, descriptors %s, goroutines %s; only growth counts (a restarted node shows less); samples every %s while a node is up; lag = the log's last sequence (through the client ports) minus the node's apprun_read_models_applied_seq",
		rssRule, fdRule, goRule, sampleEvery(cfg.SoakDuration))
	if l.errs.total() > 0 {
		s.note("client errors by kind: %s", l.errs.String())
	}
	if len(k.stuck) > 0 {
		s.note("stuck runs: %s", strings.Join(k.stuck[:min(len(k.stuck), 10)], ", "))
	}
	if len(k.openStreams) > 0 {
		s.note("streams still open %s after every run ended: %s", streamGrace, strings.Join(k.openStreams, "; "))
	}
	if len(k.money.wrong) > 0 {
		s.note("money: %s", strings.Join(k.money.wrong, "; "))
	}
	s.note("end: load stopped, every run terminal (within %s), every stream ended (within %s more), then the money read on a node (balance = grant − completed runs' cost, statement, held runs) and `apprun audit --json` run on the last node killed, stopped, reading the log through the others' client ports",
		drainWithin, streamGrace)
	if cfg.Plot != "" {
		s.note("plot: %s", cfg.Plot)
	}
}

// plotSoak draws the soak's series to path.
func plotSoak(path string, s *Scenario, d time.Duration, kills int) error {
	span := d.Seconds()
	for _, se := range s.Series {
		if n := len(se.T); n > 0 {
			span = max(span, se.T[n-1])
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	title := fmt.Sprintf("apprun soak: 3 nodes, %s, %d kills (%s)", d, kills, time.Now().UTC().Format(time.DateOnly))
	if err := writePlot(f, title, span, s.Series, s.Marks); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func abs(v float64) float64 { return max(v, -v) }

func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }
