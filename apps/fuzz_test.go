package apps

import (
	"testing"
)

// FuzzParseReply: whatever a model answers, reading it never panics, and
// what it accepts is a JSON object.
func FuzzParseReply(f *testing.F) {
	for _, s := range []string{`{"a":1}`, "```json\n{}\n```", `Sure: {"emails":[]} ok`, `[{"a":1}]`, `{`, "", "```", "{}}{"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, reply string) {
		out, err := parseReply(reply)
		if err == nil && out == nil {
			t.Fatalf("parseReply(%q) accepted no object", reply)
		}
	})
}

// FuzzDefinition: whatever a definition file holds, loading it gives a
// definition or an error, never a panic.
func FuzzDefinition(f *testing.F) {
	f.Add([]byte("slug: a-b\nname: A\ndescription: d\nprice: 1\ntimeout: 5m\nneeds_model: true\n" +
		"input_schema: {type: object, properties: {t: {type: string}, e: {enum: [x, y]}}}\n" +
		"output_schema: {type: object, required: [o]}\n" +
		"steps: [{name: w, message: m, model: {instructions: 'use {{.Input.e}}'}}]\n" +
		"summary: '{{.Output.o}}'\nexamples: [{input: {t: hi, e: x}, output: {o: 1}}]\n"))
	f.Add([]byte("slug: x\nsteps: [{name: a, tool: github_repo}]\n"))
	f.Add([]byte(`{"slug":"x","input_schema":{"$ref":"#"},"examples":[{"input":{}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := parseDefinition(data)
		if err != nil {
			return
		}
		_, _ = check(d)
	})
}

// FuzzReadReply: whatever a model answers for the cold email writer,
// reading and checking it never panics, and a reply it refuses has
// problems in words for the repair and the failure.
func FuzzReadReply(f *testing.F) {
	for _, s := range []string{`{"emails":[{"touch":1}]}`, `{"emails":"x","extra":null}`, `{"emails":[]}`, "Sure!", `{"emails":[{"touch":"1","send_day":-1,"angle":"","subject":"s","body":"b"}]}`} {
		f.Add(s)
	}
	defs, err := Shipped()
	if err != nil {
		f.Fatal(err)
	}
	var c *compiled
	for _, d := range defs {
		if d.Slug == ColdEmailSlug {
			if c, err = check(d); err != nil {
				f.Fatal(err)
			}
		}
	}
	data := c.promptData(map[string]any{"interaction_language": "English", "cta_goal": "Meeting"}, false)
	f.Fuzz(func(t *testing.T, reply string) {
		out, bad, err := c.readReply(reply, "write_sequence", data)
		switch {
		case err != nil:
			t.Fatalf("readReply(%q): %v", reply, err)
		case bad == nil && out == nil:
			t.Fatalf("readReply(%q) accepted nothing", reply)
		case bad != nil && (len(bad.problems) == 0 && !bad.notJSON || bad.words() == "" || bad.repairMessage() == ""):
			t.Fatalf("readReply(%q) refused it without words: %+v", reply, bad)
		}
	})
}
