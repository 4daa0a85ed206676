package engage

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Prices are a model's prompt-cache prices in USD per million tokens (the
// unit of pi's model registry). A cache miss writes the prefix at
// CacheWrite where a hit would have read it at CacheRead, so each re-billed
// token costs CacheWrite-CacheRead extra.
type Prices struct {
	CacheRead, CacheWrite float64 // USD per million tokens read from, written to the cache
}

// ExtraCost is the cost in USD of re-billing tokens at these prices.
func (p Prices) ExtraCost(tokens int64) float64 {
	return float64(tokens) * (p.CacheWrite - p.CacheRead) / 1e6
}

// WriteTable writes the replay as a table, one line per request, and a
// summary; prices may be nil. A modelled replay says so above the table and
// beside every modelled figure. An entry id that is not plain printable text
// is printed Go-quoted, so no byte of the transcript reaches the terminal as
// a control character.
func (rp *Replay) WriteTable(w io.Writer, prices *Prices) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "window %d, reserve %d: threshold %d (strictly greater engages)\n", rp.Window, rp.Reserve, rp.Threshold)
	if rp.Modelled {
		fmt.Fprintf(bw, "MODELLED: pruned ratio %s. Once a request goes out pruned under a policy, that policy's\n", ratio(rp.PrunedRatio))
		fmt.Fprintf(bw, "next estimates anchor on %s x the recorded usage. Decisions, switches and re-billed\n", ratio(rp.PrunedRatio))
		fmt.Fprintf(bw, "tokens below are modelled, not measured; the estimate column is as recorded.\n")
	} else {
		fmt.Fprintf(bw, "usage as recorded (pruned ratio 1): no figure below is modelled\n")
	}
	fmt.Fprintln(bw)
	head := fmt.Sprintf("%5s  %-10s %6s %9s  %-10s  %-9s  %-9s", "req", "entry", "line", "estimate", "reset", "stateless", "sticky")
	if rp.Modelled {
		head += fmt.Sprintf("  %11s  %11s", "stateless~", "sticky~")
	}
	fmt.Fprintln(bw, strings.TrimRight(head, " "))
	for _, r := range rp.Rows {
		line := fmt.Sprintf("%5d  %-10s %6d %9s  %-10s  %-9s  %-9s", r.N, printable(r.Entry), r.Line, r.Before.Reading(), reset(&r.Request), shape(r.Stateless), shape(r.Sticky))
		if rp.Modelled {
			line += fmt.Sprintf("  %11s  %11s", r.StatelessReading, r.StickyReading)
		}
		fmt.Fprintln(bw, strings.TrimRight(line, " "))
	}
	fmt.Fprintln(bw)
	mark := ""
	if rp.Modelled {
		mark = " (modelled)"
	}
	fmt.Fprintf(bw, "%-28s %12s %12s\n", "", "stateless", "sticky")
	fmt.Fprintf(bw, "%-28s %12d %12d\n", "requests", len(rp.Rows), len(rp.Rows))
	fmt.Fprintf(bw, "%-28s %12d %12d\n", "pruned requests"+mark, rp.Stateless.Pruned, rp.Sticky.Pruned)
	fmt.Fprintf(bw, "%-28s %12d %12d\n", "prefix switches"+mark, rp.Stateless.Switches, rp.Sticky.Switches)
	fmt.Fprintf(bw, "%-28s %12d %12d\n", "re-billed tokens"+mark, rp.Stateless.Rebilled, rp.Sticky.Rebilled)
	if prices != nil {
		fmt.Fprintf(bw, "%-28s %12.4f %12.4f\n", "extra cost, USD"+mark, prices.ExtraCost(rp.Stateless.Rebilled), prices.ExtraCost(rp.Sticky.Rebilled))
		fmt.Fprintf(bw, "(cache read %s, cache write %s USD per million tokens)\n", ratio(prices.CacheRead), ratio(prices.CacheWrite))
	}
	return bw.Flush()
}

// jsonRow is one request of the JSON form.
type jsonRow struct {
	Request  int      `json:"request"` // 1-based
	Entry    jsonText `json:"entry"`   // the assistant entry's id
	Estimate *int64   `json:"estimate"`
	Reset    bool     `json:"reset"`
	// ModelChange: the request went to another model than the one
	// before it, so no policy found its prefix cached.
	ModelChange bool `json:"model_change"`
	Stateless   bool `json:"stateless"`
	Sticky      bool `json:"sticky"`
	// The readings each policy decided on: the estimate as recorded, or
	// the modelled one; null when unknown.
	StatelessEstimate Reading `json:"stateless_estimate"`
	StickyEstimate    Reading `json:"sticky_estimate"`
}

// jsonSummary ends the JSON form, as {"summary": {...}}, the shape every
// sessdb command that prints a stream ends with (docs/json.md).
type jsonSummary struct {
	Requests              int     `json:"requests"`
	Window                int64   `json:"window"`
	Reserve               int64   `json:"reserve"`
	Threshold             int64   `json:"threshold"`
	PrunedRatio           float64 `json:"pruned_ratio"`
	Modelled              bool    `json:"modelled"`
	PrunedStateless       int     `json:"pruned_stateless"`
	PrunedSticky          int     `json:"pruned_sticky"`
	SwitchesStateless     int     `json:"switches_stateless"`
	SwitchesSticky        int     `json:"switches_sticky"`
	RebilledStateless     int64   `json:"rebilled_stateless"`
	RebilledSticky        int64   `json:"rebilled_sticky"`
	CacheReadPriceUSD     *usd    `json:"cache_read_price_usd"` // per million tokens; null without prices
	CacheWritePriceUSD    *usd    `json:"cache_write_price_usd"`
	ExtraCostStatelessUSD *usd    `json:"extra_cost_stateless_usd"`
	ExtraCostStickyUSD    *usd    `json:"extra_cost_sticky_usd"`
	Interrupted           bool    `json:"interrupted"` // always false: a replay is not interrupted, it is killed
}

// usd is an amount of money: a JSON number with exactly 4 decimals, so
// that a cost never prints as 0.7951353000000001.
type usd float64

// MarshalJSON writes u with 4 decimals.
func (u usd) MarshalJSON() ([]byte, error) { return fmt.Appendf(nil, "%.4f", float64(u)), nil }

func money(f float64) *usd { u := usd(f); return &u }

// MarshalJSON writes a reading as its number, or null when unknown.
func (r Reading) MarshalJSON() ([]byte, error) {
	if !r.Known {
		return []byte("null"), nil
	}
	return strconv.AppendInt(nil, r.Tokens, 10), nil
}

// WriteJSON writes one JSON object per request, then {"summary": {...}},
// each on its own line: the objects docs/json.md documents for engage
// replay. "estimate" is pi's estimate before the request as recorded, null
// where pi reports null; "stateless_estimate" and "sticky_estimate" are
// the readings each policy decided on (the recorded one, or the modelled
// one). "entry" escapes every character that is not printable (controls,
// bidi overrides) as \uXXXX, so the output is safe on a terminal and
// decodes to the id as read (invalid UTF-8 aside, which encoding/json
// writes as U+FFFD). prices may be nil: the money fields are then null.
func (rp *Replay) WriteJSON(w io.Writer, prices *Prices) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, r := range rp.Rows {
		row := jsonRow{Request: r.N, Entry: jsonText(r.Entry), Reset: r.Event != None, ModelChange: r.NewModel, Stateless: r.Stateless, Sticky: r.Sticky,
			StatelessEstimate: r.StatelessReading, StickyEstimate: r.StickyReading}
		if rd := r.Before.Reading(); rd.Known {
			row.Estimate = &rd.Tokens
		}
		if err := enc.Encode(row); err != nil {
			return err
		}
	}
	sum := jsonSummary{
		Requests: len(rp.Rows), Window: rp.Window, Reserve: rp.Reserve, Threshold: rp.Threshold,
		PrunedRatio: rp.PrunedRatio, Modelled: rp.Modelled,
		PrunedStateless: rp.Stateless.Pruned, PrunedSticky: rp.Sticky.Pruned,
		SwitchesStateless: rp.Stateless.Switches, SwitchesSticky: rp.Sticky.Switches,
		RebilledStateless: rp.Stateless.Rebilled, RebilledSticky: rp.Sticky.Rebilled,
	}
	if prices != nil {
		sum.CacheReadPriceUSD, sum.CacheWritePriceUSD = money(prices.CacheRead), money(prices.CacheWrite)
		sum.ExtraCostStatelessUSD = money(prices.ExtraCost(rp.Stateless.Rebilled))
		sum.ExtraCostStickyUSD = money(prices.ExtraCost(rp.Sticky.Rebilled))
	}
	if err := enc.Encode(struct {
		Summary jsonSummary `json:"summary"`
	}{sum}); err != nil {
		return err
	}
	return bw.Flush()
}

// printable returns s as it can go to a terminal: unchanged when it is
// valid UTF-8 of printable characters (strconv.IsPrint: letters, marks,
// numbers, punctuation, symbols and the ASCII space) that does not start
// with a double quote, and Go-quoted otherwise (strconv.Quote: "a\x1b[2J",
// "\r", "\u202e", "\xff"). A transcript's ids are the writer's choice;
// printed raw, an escape sequence in one would drive the reader's terminal,
// a carriage return would overwrite the line and a bidi override would
// reorder it. The leading-quote rule keeps the two forms apart: a field that
// starts with " is always a quoted one.
func printable(s string) string {
	if utf8.ValidString(s) && !strings.HasPrefix(s, `"`) && !strings.ContainsFunc(s, notPrint) {
		return s
	}
	return strconv.Quote(s)
}

func notPrint(r rune) bool { return !strconv.IsPrint(r) }

// jsonText is a string that encoding/json would not make terminal-safe on
// its own: it escapes the C0 controls but writes DEL, the C1 controls
// (U+009B is a one-character CSI to many terminals) and the bidi overrides
// raw. MarshalJSON escapes every character strconv.IsPrint refuses as
// \uXXXX, which any JSON reader decodes back to the same string.
type jsonText string

// MarshalJSON writes t as a JSON string in which every character is
// printable.
func (t jsonText) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(string(t))
	if err != nil || !bytes.ContainsFunc(b, notPrint) {
		return b, err
	}
	out := make([]byte, 0, len(b)+12)
	for _, r := range string(b) {
		if !notPrint(r) {
			out = utf8.AppendRune(out, r)
			continue
		}
		if r > 0xffff {
			hi, lo := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, hi, lo)
			continue
		}
		out = fmt.Appendf(out, `\u%04x`, r)
	}
	return out, nil
}

func shape(pruned bool) string {
	if pruned {
		return "PRUNED"
	}
	return "raw"
}

// reset is the table's reset column: the event, "model" for the first
// request on another model (a new prefix for the cache, not a reset of the
// engagement), or "-".
func reset(r *Request) string {
	switch {
	case r.Event != None:
		return r.Event.String()
	case r.NewModel:
		return "model"
	}
	return "-"
}

// ratio writes a ratio or a price as the flags take one, digits with at
// most one point: never "1e+06" or "1e-05", which they refuse.
func ratio(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
