package main

import (
	"os"
	"strings"
	"sync"
	"time"
)

// sampler reads a node's RSS and descriptor count every interval and keeps
// the highest of each, until stopped.
type sampler struct {
	node    *Node
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	peakRSS int64
	peakFDs int
}

func startSampler(n *Node, every time.Duration) *sampler {
	s := &sampler{node: n, stop: make(chan struct{}), done: make(chan struct{})}
	s.sample()
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				s.sample()
				return
			case <-t.C:
				s.sample()
			}
		}
	}()
	return s
}

func (s *sampler) sample() {
	rss, err1 := s.node.RSS()
	fds, err2 := s.node.FDs()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err1 == nil {
		s.peakRSS = max(s.peakRSS, rss)
	}
	if err2 == nil {
		s.peakFDs = max(s.peakFDs, fds)
	}
}

// Peak is the highest RSS and descriptor count seen so far.
func (s *sampler) Peak() (rss int64, fds int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peakRSS, s.peakFDs
}

// Stop takes a last sample and returns the peaks.
func (s *sampler) Stop() (rss int64, fds int) {
	close(s.stop)
	<-s.done
	return s.Peak()
}

// loadAvg is /proc/loadavg's first three figures: how busy the machine
// was (the node shares it with whatever else runs).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
