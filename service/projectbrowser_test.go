package service

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestProjectPageInBrowser drives the project view in headless Chromium:
// an admin signs in, sees the project labelling, claims a record (drawn
// as pixels, an image project), labels it with a class button, and reads
// the plan and ε per group as the officer does.
func TestProjectPageInBrowser(t *testing.T) {
	path := chromium()
	if path == "" {
		t.Skip("no Chromium installed (Debian: apt-get install chromium; .ci/run installs it): the page is not tested in a browser")
	}
	ts := newTestServer(t)
	const n = 300
	pool, _ := projectBlobs(n, 4)
	body := strings.Replace(projectBody("img", "poisson", "entropy", n), `"dim":4`, `"image":[2,2,1],"model":"logreg"`, 1)
	ts.mustDo(201, RoleAdmin, "POST", "/v1/projects", body, nil)
	ts.mustDo(200, RoleIngest, "POST", "/v1/projects/img/pool", pool, nil, "Content-Type", "application/x-ndjson")
	ts.mustDo(202, RoleAdmin, "POST", "/v1/projects/img/start", "", nil)
	ts.waitState("img", stateLabelling)

	ctx, cancel := startBrowser(t, path)
	defer cancel()
	var state, queue, plan, privacy, msg string
	var pixels, classes int
	err := chromedp.Run(ctx,
		chromedp.Navigate(ts.http.URL+"/ui/"),
		chromedp.SendKeys("#token", ts.tok[RoleAdmin], chromedp.ByID),
		chromedp.Click("#login", chromedp.ByID),
		chromedp.WaitVisible("#project-view", chromedp.ByID),
		chromedp.Poll(`document.getElementById("project-state").textContent.includes("labelling")`, nil, chromedp.WithPollingTimeout(15*time.Second)),
		chromedp.Text("#project-state", &state, chromedp.ByID),
		chromedp.Poll(`document.getElementById("project-privacy").textContent.includes("not-selected")`, nil, chromedp.WithPollingTimeout(15*time.Second)),
		chromedp.Text("#project-plan", &plan, chromedp.ByID),
		chromedp.Text("#project-privacy", &privacy, chromedp.ByID),
		chromedp.Click("#project-claim", chromedp.ByID),
		chromedp.WaitVisible("#project-record-box", chromedp.ByID),
		chromedp.Text("#project-queue", &queue, chromedp.ByID),
		chromedp.Evaluate(`document.querySelectorAll("#project-record canvas.pixels").length`, &pixels),
		chromedp.Evaluate(`document.querySelectorAll("#project-classes button").length`, &classes),
		chromedp.Click("#project-classes button", chromedp.ByQuery),
		chromedp.Poll(`document.getElementById("status").textContent.includes("labelled")`, nil, chromedp.WithPollingTimeout(15*time.Second)),
		chromedp.Text("#status", &msg, chromedp.ByID),
	)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(state, "round 0 of 3") || !strings.Contains(queue, "open") || pixels != 1 || classes != 3 {
		t.Errorf("state %q, queue %q, %d canvases, %d class buttons", state, queue, pixels, classes)
	}
	if !strings.Contains(plan, "σ per phase") || !strings.Contains(privacy, "not-selected") || !strings.Contains(msg, "labelled") {
		t.Errorf("plan %q, privacy %q, status %q", plan, privacy, msg)
	}
	var q projectQueueView
	ts.mustDo(200, RoleAnnotator, "GET", "/v1/projects/img/queue", "", &q)
	if q.Labelled != 1 {
		t.Errorf("the page's label is not stored: %+v", q)
	}
}
