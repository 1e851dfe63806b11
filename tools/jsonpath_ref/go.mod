module aicr.local/tools/jsonpath_ref

go 1.26.0

require (
	k8s.io/apimachinery v0.37.2
	k8s.io/client-go v0.37.2
)

require sigs.k8s.io/json v0.0.0-20250730193827-2d320260d730 // indirect
