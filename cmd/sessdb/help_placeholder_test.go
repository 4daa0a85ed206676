package main

import (
	"strings"
	"testing"
)

// stats' help named --since's value "duration", in lower case, as no other
// flag's value is named but a literal one (--to etcd, --require answered);
// its usage line says "[--since DURATION]", as docs/stats.md does.
func TestStatsHelpNamesSincesValueAsItsUsageLineDoes(t *testing.T) {
	help := cmdStats.helpText()
	if !strings.Contains(cmdStats.usage, "[--since DURATION]") || !strings.Contains(help, "\n  --since DURATION\n") {
		t.Errorf("stats' usage %q and help %q; want --since DURATION in both", cmdStats.usage, lineOf(help, "  --since"))
	}
}

// lineOf is the line of s that begins with prefix, or "".
func lineOf(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}
