package scheduler

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/networkio/webchecker/probing"
)

// recentOf records the probes of verdicts, oldest first, one letter a
// probe: S a success, F a failure (with reason Timeout and a message
// naming the probe's index).
func recentOf(w Window, verdicts string) Recent {
	var r Recent
	for i, v := range verdicts {
		res := probing.Result{Success: true, Reason: probing.ReasonSucceeded}
		if v == 'F' {
			res = probing.Result{Reason: probing.ReasonTimeout, Message: "probe " + string(rune('a'+i%26))}
		}
		r = w.record(r, res)
	}
	return r
}

// TestWindowJudgesTheLatestProbes: a window is Down once Failures of its
// latest Probes probes failed, Up once Probes-Failures+1 of them
// succeeded, and Undecided while it holds too few probes for either.
func TestWindowJudgesTheLatestProbes(t *testing.T) {
	tests := map[string]struct {
		window   Window
		verdicts string // oldest first
		want     Verdict
		count    WindowCount
	}{
		"none yet":                      {Window{2, 6}, "", Undecided, WindowCount{0, 0}},
		"one failure of 2 needed":       {Window{2, 6}, "F", Undecided, WindowCount{1, 1}},
		"two failures at once":          {Window{2, 6}, "FF", Down, WindowCount{2, 2}},
		"four successes of 5 needed":    {Window{2, 6}, "SSSS", Undecided, WindowCount{4, 0}},
		"five successes: healthy":       {Window{2, 6}, "SSSSS", Up, WindowCount{5, 0}},
		"one in three fails":            {Window{2, 6}, "SSFSSF", Down, WindowCount{6, 2}},
		"one in three, long after":      {Window{2, 6}, "SSFSSFSSFSSFSS", Down, WindowCount{6, 2}},
		"one in four fails, healthy":    {Window{2, 6}, "SSSFSS", Up, WindowCount{6, 1}},
		"one in four fails, tripped":    {Window{2, 6}, "SSSFSSSF", Down, WindowCount{6, 2}},
		"failures left the window":      {Window{2, 6}, "FFFFSSSSSS", Up, WindowCount{6, 0}},
		"recovering: 4 of 6 succeeded":  {Window{2, 6}, "FFFFFFSSSS", Down, WindowCount{6, 2}},
		"recovering: 5 of 6 succeeded":  {Window{2, 6}, "FFFFFFSSSSS", Up, WindowCount{6, 1}},
		"one of one":                    {Window{1, 1}, "SF", Down, WindowCount{1, 1}},
		"one of one, up":                {Window{1, 1}, "FS", Up, WindowCount{1, 0}},
		"all of three, 2 failed":        {Window{3, 3}, "SFF", Up, WindowCount{3, 2}},
		"all of three, all failed":      {Window{3, 3}, "SFFF", Down, WindowCount{3, 3}},
		"all of three, one success":     {Window{3, 3}, "FFFS", Up, WindowCount{3, 2}},
		"64 of 64, 63 failed":           {Window{64, 64}, "S" + strings.Repeat("F", 63), Up, WindowCount{64, 63}},
		"64 of 64, all failed":          {Window{64, 64}, strings.Repeat("F", 70), Down, WindowCount{64, 64}},
		"64 of 64, one success heals":   {Window{64, 64}, strings.Repeat("F", 70) + "S", Up, WindowCount{64, 63}},
		"probes above 64 mean 64":       {Window{2, 100}, strings.Repeat("S", 63), Up, WindowCount{63, 0}},
		"failures above probes: probes": {Window{9, 3}, "SFFF", Down, WindowCount{3, 3}},
		"failures 0 mean 1":             {Window{0, 3}, "SSF", Down, WindowCount{3, 1}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := recentOf(tc.window, tc.verdicts)
			assert.Equal(t, tc.want, tc.window.Judge(r), "verdict")
			assert.Equal(t, tc.count, r.Count(tc.window), "count")
			assert.Equal(t, min(len(tc.verdicts), MaxWindow), r.Len)
		})
	}
}

// TestWindowNamesTheLatestFailure: the reason and message kept are the
// latest failed probe's, and nothing once no probe held failed.
func TestWindowNamesTheLatestFailure(t *testing.T) {
	w := Window{Failures: 2, Probes: 3}
	r := recentOf(w, "FSFS")
	assert.Equal(t, probing.ReasonTimeout, r.FailureReason)
	assert.Equal(t, "probe c", r.FailureMessage)
	assert.Empty(t, recentOf(w, "F"+strings.Repeat("S", MaxWindow)).FailureMessage, "a failure no window holds is named")
	assert.Equal(t, "probe a", recentOf(w, "F"+strings.Repeat("S", MaxWindow-1)).FailureMessage)
}

// TestDisabledWindowKeepsNothing: without a window no probe is held and
// the verdict is never decided, so the streaks alone decide.
func TestDisabledWindowKeepsNothing(t *testing.T) {
	var w Window
	r := recentOf(w, "FFFFSF")
	assert.Equal(t, Recent{}, r)
	assert.Equal(t, Undecided, w.Judge(recentOf(Window{1, 1}, "F")))
}
