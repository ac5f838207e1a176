package main

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/apprun/apprun/tools/walk/trace"
)

var verbose = flag.Bool("v", false, "print each stop")

// reportStops prints the walk in order: each function entered on the
// handler's goroutine from its entry to the log port (a build
// without the overlay records none). A visit is a run of stops in one
// file; a return is a visit to a file visited before. It prints them
// for the whole walk and for the create's own part (the shared request
// reading's stops left out).
func reportStops(stops []trace.Stop, keyedJSON map[string]bool) error {
	if len(stops) == 0 {
		return errors.New("no stops recorded: build with make walk (tools/walk/overlay)")
	}
	var walk, own []trace.Stop
	for _, s := range stops {
		walk = append(walk, s)
		if !keyedJSON[s.File+" "+s.Func] {
			own = append(own, s)
		}
	}
	for _, part := range []struct {
		name  string
		stops []trace.Stop
	}{{"handler to log port", walk}, {"the create's own", own}} {
		files, returns, visits := visitsOf(part.stops)
		fmt.Printf("stops, %s: %d in %d files, %d returns to a file visited before%s\n",
			part.name, len(part.stops), files, returns, mostVisited(visits))
		if *verbose {
			for _, s := range part.stops {
				fmt.Printf("  %s %s\n", s.File, s.Func)
			}
		}
	}
	return nil
}

// visitsOf counts the files stops are in, the returns, and the visits to
// each file.
func visitsOf(stops []trace.Stop) (files, returns int, visits map[string]int) {
	visits = map[string]int{}
	last := ""
	for _, s := range stops {
		if s.File == last {
			continue
		}
		last = s.File
		if visits[s.File] > 0 {
			returns++
		} else {
			files++
		}
		visits[s.File]++
	}
	return files, returns, visits
}

// mostVisited names the files visited more than twice, most first.
func mostVisited(visits map[string]int) string {
	var many []string
	for f, n := range visits {
		if n > 2 {
			many = append(many, f)
		}
	}
	sort.Slice(many, func(i, j int) bool {
		if visits[many[i]] != visits[many[j]] {
			return visits[many[i]] > visits[many[j]]
		}
		return many[i] < many[j]
	})
	var b strings.Builder
	for i, f := range many {
		sep := ", "
		if i == 0 {
			sep = " ("
		}
		fmt.Fprintf(&b, "%s%s %d visits", sep, f, visits[f])
	}
	if b.Len() > 0 {
		b.WriteString(")")
	}
	return b.String()
}

// firstMet is the files of stops in the order they are first entered.
func firstMet(stops []trace.Stop) []string {
	var order []string
	for _, s := range stops {
		if !slices.Contains(order, s.File) {
			order = append(order, s.File)
		}
	}
	return order
}
