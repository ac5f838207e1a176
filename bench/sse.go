package bench

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// event is one Server-Sent Event as the bench reads it.
type event struct {
	ID   uint64
	Type string
	Data string
}

// stream opens a run's event stream after lastID (0: from the start) and
// calls fn for each event until fn returns false, the stream ends or ctx
// is done. opened, when not nil, is called once the headers arrived.
func (s *Server) stream(ctx context.Context, client *http.Client, key, runNo string, lastID uint64, opened func(), fn func(event) bool) error {
	req, err := http.NewRequestWithContext(ctx, "GET", s.URL+"/api/v1/runs/"+runNo+"/events", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if lastID > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatUint(lastID, 10))
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("event stream: status %d", resp.StatusCode)
	}
	if opened != nil {
		opened()
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	var ev event
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.Type != "" && !fn(ev) {
				return nil
			}
			ev = event{}
		case strings.HasPrefix(line, "id: "):
			ev.ID, _ = strconv.ParseUint(line[4:], 10, 64)
		case strings.HasPrefix(line, "event: "):
			ev.Type = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.Data = line[6:]
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

func terminal(t string) bool { return t == "completed" || t == "failed" }
