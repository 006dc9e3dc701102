package capture_test

import (
	"fmt"

	"github.com/snapq/snapq/capture"
)

// A 2,000 px page in a 720 px viewport is cut into two full screens and the 560 px rest.
func ExamplePlanSegments() {
	plan := capture.PlanSegments(2000, 720, capture.NormalizeMaxSegments(10))
	fmt.Println(plan.Total, plan.Captured, plan.Truncated, plan.Rects)

	tall := capture.PlanSegments(40000, 720, 10)
	fmt.Println(tall.Total, tall.Captured, tall.Truncated)
	// Output:
	// 3 3 false [{0 720} {720 720} {1440 560}]
	// 56 10 true
}
