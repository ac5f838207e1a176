package apps

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/goccy/go-yaml"
)

// embedded holds the shipped definitions, one App a file.
//
//go:embed catalog/*.yaml
var embedded embed.FS

// Load reads the shipped definitions, then those in dir (when dir is not
// empty: *.yaml, *.yml and *.json; a definition with a shipped slug
// replaces it), checks every one, and returns the catalog for env. An App
// that needs a model is listed but not runnable when env has none. The
// first invalid definition stops it, with its file named.
func Load(dir string, env *Env) ([]engine.App, error) {
	env = env.withDefaults()
	defs := map[string]*compiled{}
	from := map[string]string{}
	add := func(name string, c *compiled, override bool) error {
		d := c.def
		if prev, dup := from[d.Slug]; dup && !(override && strings.HasPrefix(prev, "catalog/")) {
			return fmt.Errorf("apps: %s: slug %q is already defined by %s", name, d.Slug, prev)
		}
		defs[d.Slug], from[d.Slug] = c, name
		return nil
	}
	shipped, err := compiledShipped()
	if err != nil {
		return nil, err
	}
	for _, s := range shipped {
		if err := add(s.name, s.c, false); err != nil {
			return nil, err
		}
	}
	if dir != "" {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("apps: APPRUN_APPS_DIR: %w", err)
		}
		for _, e := range entries {
			switch path.Ext(e.Name()) {
			case ".yaml", ".yml", ".json":
			default:
				continue
			}
			name := filepath.Join(dir, e.Name())
			data, err := os.ReadFile(name)
			if err != nil {
				return nil, fmt.Errorf("apps: %w", err)
			}
			c, err := compile(name, data)
			if err != nil {
				return nil, err
			}
			if err := add(name, c, true); err != nil {
				return nil, err
			}
		}
	}
	slugs := make([]string, 0, len(defs))
	for s := range defs {
		slugs = append(slugs, s)
	}
	sort.Strings(slugs)
	out := make([]engine.App, 0, len(slugs))
	for _, s := range slugs {
		out = append(out, defs[s].app(env))
	}
	return out, nil
}

func compile(name string, data []byte) (*compiled, error) {
	d, err := parseDefinition(data)
	if err != nil {
		return nil, fmt.Errorf("apps: %s: %w", name, err)
	}
	return checked(name, data, d)
}

// checked checks d, read from the file name holding data; its version is
// the file's hash.
func checked(name string, data []byte, d Definition) (*compiled, error) {
	c, err := check(d)
	if err != nil {
		return nil, fmt.Errorf("apps: %s: %w", name, err)
	}
	sum := sha256.Sum256(data)
	c.version = "sha256:" + hex.EncodeToString(sum[:])
	return c, nil
}

// shippedFile is one embedded definition, as written and as JSON.
type shippedFile struct {
	name     string
	data, js []byte
}

// shippedFiles converts each embedded definition from YAML once per
// process: a node's start checks them (compiledShipped) and reads their
// examples (Shipped), and parsing 63 YAML files again on every start was
// a tenth of the CPU of the test packages that start nodes.
var shippedFiles = sync.OnceValues(func() ([]shippedFile, error) {
	names, _ := fs.Glob(embedded, "catalog/*.yaml")
	out := make([]shippedFile, 0, len(names))
	for _, name := range names {
		data, err := embedded.ReadFile(name)
		if err != nil {
			return nil, err
		}
		js, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, fmt.Errorf("apps: %s: not YAML or JSON: %w", name, err)
		}
		out = append(out, shippedFile{name, data, js})
	}
	return out, nil
})

type namedCompiled struct {
	name string
	c    *compiled
}

// compiledShipped checks the embedded definitions once per process: they
// never change, a compiled definition is read-only, and checking 63 of
// them (schemas, templates, examples) is most of a node's start.
var compiledShipped = sync.OnceValues(func() ([]namedCompiled, error) {
	files, err := shippedFiles()
	if err != nil {
		return nil, err
	}
	out := make([]namedCompiled, 0, len(files))
	for _, f := range files {
		d, err := decodeDefinition(f.js)
		if err != nil {
			return nil, fmt.Errorf("apps: %s: %w", f.name, err)
		}
		c, err := checked(f.name, f.data, d)
		if err != nil {
			return nil, err
		}
		out = append(out, namedCompiled{f.name, c})
	}
	return out, nil
})

// Shipped returns the shipped definitions as written (examples included:
// reference pages and tests use them), sorted by slug. Each call decodes
// its own values: a caller may change what it gets.
func Shipped() ([]Definition, error) {
	list, err := shippedFiles()
	if err != nil {
		return nil, err
	}
	out := make([]Definition, 0, len(list))
	for _, f := range list {
		d, err := decodeDefinition(f.js)
		if err != nil {
			return nil, fmt.Errorf("apps: %s: %w", f.name, err)
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slug < out[j].Slug })
	return out, nil
}

// Default is the shipped catalog with no model provider configured.
func Default() []engine.App {
	list, err := Load("", &Env{})
	if err != nil {
		panic(err) // the shipped definitions are checked by the tests
	}
	return list
}

// app is the definition as the engine sees it.
func (c *compiled) app(env *Env) engine.App {
	d := c.def
	a := engine.App{
		Slug: d.Slug, Name: d.Name, Description: d.Description, Category: d.Category, Price: d.Price,
		Timeout: time.Duration(d.Timeout), Retention: time.Duration(d.Retention),
		AcceptsBrandContext: d.AcceptsBrandContext, InputSchema: d.InputSchema, OutputSchema: d.OutputSchema,
		Runnable: !d.NeedsModel || env.Model != nil, Version: c.version,
	}
	if a.Runnable {
		a.Executor = c.executor(env)
	}
	return a
}
