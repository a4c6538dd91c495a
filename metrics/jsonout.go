package metrics

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
)

// jsonSigDigits is how many significant digits WriteJSON keeps in floats:
// enough for any human comparison, few enough that two computations of the
// same quantity that differ only in their last bits print identically.
const jsonSigDigits = 6

// WriteJSON writes s as indented JSON followed by a newline. Field order is
// the struct order, so the output is stable; every float is rounded to 6
// significant digits (and values below 1e-6 in magnitude print as 0), so
// the same run prints the same bytes on any machine.
func WriteJSON(w io.Writer, s *Summary) error {
	r := RoundSummary(*s)
	if r.Services == nil {
		r.Services = []ServiceSummary{} // the contract shows a list, never null
	}
	b, err := json.MarshalIndent(&r, "", "  ")
	if err != nil {
		return fmt.Errorf("metrics: encode summary: %w", err)
	}
	b = append(b, '\n')
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("metrics: write summary: %w", err)
	}
	return nil
}

// RoundSummary returns a deep copy of s with every float rounded as
// WriteJSON prints it. Summaries read back by Load are already rounded, so
// RoundSummary(s) is what a Save/Load round trip returns. s is not
// modified, nor anything it points to.
func RoundSummary(s Summary) Summary {
	return roundCopy(reflect.ValueOf(s)).Interface().(Summary)
}

// roundCopy returns a deep copy of v with every float64 reachable through
// structs, slices, maps and pointers rounded. Reflection keeps fields added
// to Summary later rounded without anyone remembering to.
func roundCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Float64:
		return reflect.ValueOf(RoundFloat(v.Float())).Convert(v.Type())
	case reflect.Struct:
		n := reflect.New(v.Type()).Elem()
		n.Set(v)
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				n.Field(i).Set(roundCopy(v.Field(i)))
			}
		}
		return n
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		n := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := 0; i < v.Len(); i++ {
			n.Index(i).Set(roundCopy(v.Index(i)))
		}
		return n
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		n := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			n.SetMapIndex(it.Key(), roundCopy(it.Value()))
		}
		return n
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		n := reflect.New(v.Type().Elem())
		n.Elem().Set(roundCopy(v.Elem()))
		return n
	}
	return v
}

// RoundFloat rounds x to 6 significant digits; magnitudes below 1e-6 and
// non-finite values (which JSON cannot carry) become 0.
func RoundFloat(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) < 1e-6 {
		return 0
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', jsonSigDigits, 64), 64)
	return r
}
