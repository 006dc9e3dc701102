package mcp

import (
	"context"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snapq/snapq/client"
)

func init() {
	register("capture_batch", addCaptureBatch)
	register("batch_status", addBatchStatus)
}

// MaxBatchURLs is the most URLs one capture_batch call takes (the api's
// SNAPQ_MAX_TARGETS may be lower).
const MaxBatchURLs = 100

// statusPage is how many jobs one batch_status reply lists.
const statusPage = 20

type captureBatchInput struct {
	URLs    []string `json:"urls"`
	Outputs []string `json:"outputs"`
}

var captureBatchSchema = schema(`{
  "type": "object",
  "properties": {
    "urls": {"type": "array", "minItems": 1, "maxItems": 100, "uniqueItems": true,
      "items": {"type": "string", "format": "uri", "minLength": 8, "maxLength": 2048},
      "description": "The pages to capture: absolute http:// or https:// URLs, at most 100."},
    "outputs": {"type": "array", "minItems": 1, "maxItems": 7, "uniqueItems": true,
      "items": {"type": "string", "enum": ["screenshot", "markdown", "pdf", "html", "text", "links", "metadata"]},
      "default": ["screenshot", "markdown"],
      "description": "What to make of each page."}
  },
  "required": ["urls"],
  "additionalProperties": false
}`)

func addCaptureBatch(s *sdk.Server, d *deps) {
	addTool(s, d, &sdk.Tool{
		Name:  "capture_batch",
		Title: "Capture many web pages",
		Description: "Starts capturing many pages at once in the background and returns at once with a batch id. " +
			"Call batch_status with it to follow progress and get each page's files. For one page, fetch or " +
			"screenshot answer directly.",
		InputSchema: captureBatchSchema,
		Annotations: &sdk.ToolAnnotations{OpenWorldHint: ptr(true)},
	}, d.captureBatch)
}

func (d *deps) captureBatch(ctx context.Context, c *client.Client, in captureBatchInput) (*sdk.CallToolResult, error) {
	b, err := c.CreateBatch(ctx, client.BatchRequest{URLs: in.URLs, Options: &client.Options{Outputs: &in.Outputs}})
	if err != nil {
		return nil, err
	}
	text := fmt.Sprintf("Batch %s: %d page(s) queued. Call batch_status with batch_id %q to follow it.", b.ID, len(b.Jobs), b.ID)
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}},
		StructuredContent: structured(map[string]any{"batch_id": b.ID, "jobs": len(b.Jobs), "status": b.Status})}, nil
}

type batchStatusInput struct {
	BatchID string `json:"batch_id"`
	JobID   string `json:"job_id,omitempty"`
	Cursor  string `json:"cursor,omitempty"`
}

const idPattern = `^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`

var batchStatusSchema = schema(`{
  "type": "object",
  "properties": {
    "batch_id": {"type": "string", "pattern": "` + idPattern + `", "description": "The batch id capture_batch returned."},
    "job_id": {"type": "string", "pattern": "` + idPattern + `",
      "description": "One page's job id: returns that page's status and links to its files instead of the list."},
    "cursor": {"type": "string", "maxLength": 200, "description": "next_cursor of the previous reply, for the next 20 pages."}
  },
  "required": ["batch_id"],
  "additionalProperties": false
}`)

func addBatchStatus(s *sdk.Server, d *deps) {
	addTool(s, d, &sdk.Tool{
		Name:  "batch_status",
		Title: "Follow a batch of captures",
		Description: "Reports a batch's progress (counts by status) and lists its pages 20 at a time with their " +
			"status, HTTP status, title or error. With job_id, reports that one page and links to its files.",
		InputSchema: batchStatusSchema,
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true},
	}, d.batchStatus)
}

func (d *deps) batchStatus(ctx context.Context, c *client.Client, in batchStatusInput) (*sdk.CallToolResult, error) {
	if in.JobID != "" {
		return jobStatus(ctx, c, in.BatchID, in.JobID)
	}
	b, err := c.GetBatch(ctx, in.BatchID)
	if err != nil {
		return nil, err
	}
	page, err := c.ListJobsPage(ctx, b.ID, client.ListOptions{Limit: statusPage, Cursor: in.Cursor})
	if err != nil {
		return nil, err
	}
	var sb strings.Builder
	n := b.Counts
	fmt.Fprintf(&sb, "Batch %s: %s; %d page(s): %d queued, %d running, %d succeeded, %d failed, %d canceled\n",
		b.ID, b.Status, b.Total, n.Queued, n.Running, n.Succeeded, n.Failed, n.Canceled)
	for _, j := range page.Items {
		sb.WriteString(jobLine(&j) + "\n")
	}
	if page.NextCursor != "" {
		fmt.Fprintf(&sb, "More pages: call batch_status with cursor %q.\n", page.NextCursor)
	}
	text, _ := clip(sb.String(), MaxText)
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}},
		StructuredContent: structured(map[string]any{"batch_id": b.ID, "status": b.Status, "counts": b.Counts,
			"next_cursor": page.NextCursor})}, nil
}

// jobLine is one job as a line of batch_status.
func jobLine(j *client.Job) string {
	s := fmt.Sprintf("- job %s %s: %s", j.ID, j.URL, j.Status)
	if r := j.Result; r != nil && r.HTTPStatus > 0 {
		s += fmt.Sprintf(", HTTP %d, %q", r.HTTPStatus, r.Title)
	}
	if j.Error != nil {
		s += fmt.Sprintf(", error %s: %s", j.Error.Code, j.Error.Message)
	}
	return s
}

// jobStatus reports one job of a batch with links to its artifacts.
func jobStatus(ctx context.Context, c *client.Client, batchID, jobID string) (*sdk.CallToolResult, error) {
	j, err := c.GetJob(ctx, jobID)
	if err != nil {
		return nil, err
	}
	if !strings.EqualFold(j.BatchID, batchID) {
		return nil, &toolError{Code: "not_found", Message: "job " + jobID + " is not in batch " + batchID, Field: "job_id"}
	}
	content := []sdk.Content{&sdk.TextContent{Text: jobLine(j)}}
	for i, a := range j.Artifacts {
		if i == 50 {
			content = append(content, &sdk.TextContent{Text: fmt.Sprintf("[truncated by snapq: %d more files not listed]", len(j.Artifacts)-i)})
			break
		}
		content = append(content, link(a))
	}
	return &sdk.CallToolResult{Content: content, StructuredContent: structured(map[string]any{"job": factsOf(j),
		"status": j.Status, "error": j.Error})}, nil
}
