// Command example creates a cold-email-writer run with the Go client and
// prints its events as they come (docs/cli.md):
//
//	APPRUN_API_KEY=$KEY go run ./client/example
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/apprun/apprun/client"
)

func main() {
	url := os.Getenv("APPRUN_URL")
	if url == "" {
		url = "http://127.0.0.1:8080"
	}
	c := client.New(url, os.Getenv("APPRUN_API_KEY"))
	ctx := context.Background()
	run, err := c.CreateRun(ctx, "cold-email-writer", map[string]any{
		"product_description": "Acme Ledger automates bookkeeping", "target_role": "Agency founders"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(run.RunNo, "charged", run.CreditCost, "Credits")
	err = c.Stream(ctx, run.RunNo, 0, func(ev client.Event) error {
		fmt.Println(ev.ID, ev.Type)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
}
