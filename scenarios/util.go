package scenarios

import (
	"sort"

	"google.golang.org/grpc"
)

type grpcDialOption = grpc.DialOption

func sortSlice[T any](xs []T, less func(a, b T) bool) {
	sort.Slice(xs, func(i, j int) bool { return less(xs[i], xs[j]) })
}
