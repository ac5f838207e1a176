package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// envFlags gives flags the values of their environment variables, parsed
// by the flags themselves: a bad value stops the start and names the
// variable, exactly as a bad flag would. A flag on the command line wins
// over its variable. Booleans take 1, true, yes or on, and 0, false, no or
// off.
type envFlags struct {
	fs   *flag.FlagSet
	vars map[string]string // flag name → variable
}

func newEnvFlags(fs *flag.FlagSet) *envFlags { return &envFlags{fs: fs, vars: map[string]string{}} }

// bind names the variable of a flag.
func (e *envFlags) bind(flagName, variable string) { e.vars[flagName] = variable }

// parse parses args, then sets each flag not given in them from its
// variable. A request for help (-h, --help) is answered before any
// variable is read, so a bad one does not hide the help.
func (e *envFlags) parse(args []string) error {
	if err := e.fs.Parse(args); err != nil {
		return err
	}
	given := map[string]bool{}
	e.fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, name := range slices.Sorted(maps.Keys(e.vars)) {
		variable := e.vars[name]
		v, ok := os.LookupEnv(variable)
		if !ok || v == "" || given[name] {
			continue
		}
		f := e.fs.Lookup(name)
		if f == nil {
			return fmt.Errorf("config: %s names no flag", variable)
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			switch strings.ToLower(v) {
			case "1", "true", "yes", "on":
				v = "true"
			case "0", "false", "no", "off":
				v = "false"
			default:
				return fmt.Errorf("config: %s=%q: want 1, true, yes or on, or 0, false, no or off", variable, v)
			}
		}
		if err := f.Value.Set(v); err != nil {
			return fmt.Errorf("config: %s=%q: %v (as --%s)", variable, v, err, name)
		}
	}
	return nil
}
