package main

import (
	"flag"
	"time"
)

// The long-idle workload: a server left alone longer than an agent's pause
// between the calls of one task, as one is between tasks or in an IDE
// nobody types in. boxsh returns more memory then, since it drops its
// mappings of its executable after 10 s without a call. The call that
// wakes it pays to map again what it uses. Both are measured.
var (
	longIdle  = flag.Duration("long-idle", 12*time.Second, "idle time before each long-idle memory reading and wake-up call")
	longIdles = flag.Int("long-idles", 3, "long-idle spells to measure (0: skip)")
)

func init() {
	suite = append(suite, measurement{"long idle", measureLongIdle})
	metricDefs = append(metricDefs,
		metricDef{"long_idle_rss_mb", "VmRSS after a long idle, sum, median", "MiB", 1},
		metricDef{"long_idle_anon_mb", "RssAnon after a long idle, sum, median", "MiB", 1},
		metricDef{"long_idle_wake_ms", "round trip after a long idle, median", "ms", 3},
		metricDef{"long_idle_wake_max_ms", "round trip after a long idle, max", "ms", 3},
		metricDef{"churn_long_rss_mb", "VmRSS after the -churn calls and a long idle", "MiB", 1},
		metricDef{"churn_long_growth_pct", "VmRSS growth, -churn calls then a long idle", "%", 1},
	)
}

// measureLongIdle makes a few calls, then *longIdles times: idles for
// *longIdle, reads the memory of the process tree, and times the `echo x`
// call that wakes it.
func measureLongIdle(t *target, c config) error {
	if *longIdles < 1 {
		return nil
	}
	evictPageCache(t.Bin)
	return session(t, c, "long idle", func(s *server) error {
		var answers tally
		if err := warmUp(s, idleCalls, &answers); err != nil {
			return err
		}
		var rss, anon, wake sample
		for range *longIdles {
			time.Sleep(*longIdle)
			m, err := measureTree(s.pid())
			if err != nil {
				return err
			}
			// KiB, carried in a sample of durations for its median.
			rss = append(rss, time.Duration(m.RSSKiB))
			anon = append(anon, time.Duration(m.anonKiB()))
			d, line, err := timedCall(s, "bash", bashArgs("echo x"))
			if err != nil {
				return err
			}
			wake = append(wake, d)
			answers.check(checkBash(line, "x\n"))
		}
		answers.report(t, "long idle")
		t.set("long_idle_rss_mb", float64(rss.median())/1024)
		t.set("long_idle_anon_mb", float64(anon.median())/1024)
		t.set("long_idle_wake_ms", ms(wake.median()))
		t.set("long_idle_wake_max_ms", ms(wake.percentile(100)))
		return nil
	})
}

// churnAfterLongIdle reads the memory of s once it has idled *longIdle in
// all. s made the calls of the memory-after-calls figure, and has idled
// idlePause since. It sets the growth of s's memory over before, the
// reading before the calls. That is what the calls leave behind for good.
func churnAfterLongIdle(t *target, s *server, before treeMemory) error {
	if *longIdles < 1 {
		return nil
	}
	time.Sleep(*longIdle - idlePause)
	after, err := measureTree(s.pid())
	if err != nil {
		return err
	}
	t.set("churn_long_rss_mb", float64(after.RSSKiB)/1024)
	t.set("churn_long_growth_pct", 100*float64(after.RSSKiB-before.RSSKiB)/float64(before.RSSKiB))
	t.Notes = append(t.Notes, "memory after the calls and a long idle by process, RSS (anon) MiB: "+after.breakdown())
	return nil
}
