package inputfile_test

import (
	"errors"
	"fmt"

	"github.com/stormsim/stormsim/inputfile"
)

// Read refuses a device before opening it, where os.ReadFile would read
// /dev/zero until memory runs out.
func ExampleRead() {
	_, err := inputfile.Read("/dev/zero", 1<<20)
	fmt.Println(err)
	fmt.Println(errors.Is(err, inputfile.ErrNotRegular))
	// Output:
	// /dev/zero: not a regular file: it is a device
	// true
}
