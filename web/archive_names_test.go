package web

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/snapq/snapq/jobs"
)

// TestArchiveDirs: one folder per job whatever the jobs are called; a job
// named like another's suffix keeps its name (issue 26 item 7: targets dup,
// dup-2, dup put the third job's files in the second's dup-2/).
func TestArchiveDirs(t *testing.T) {
	t.Parallel()
	var list []*jobs.JobArtifact
	for seq, name := range []string{"dup", "dup-2", "dup", "manifest.json", ""} {
		for _, file := range []string{"a.png", "b.md"} { // two files a job: one folder
			a := &jobs.JobArtifact{JobSeq: seq, JobName: name}
			a.JobID, a.Name = string(rune('A'+seq)), file
			list = append(list, a)
		}
	}
	got := archiveDirs(list)
	want := map[string]string{"A": "dup", "B": "dup-2", "C": "dup-3", "D": "manifest.json-2", "E": "job-5"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("folders (-want +got):\n%s", diff)
	}
}
