// Package bytesize formats sizes in bytes for people, in binary (IEC) units.
//
// It is the one form of sizes in boxsh's messages and listings.
package bytesize

import "fmt"

// Format writes n bytes in the largest binary unit that keeps the number at
// least 1.
//
// It has one decimal, except for a whole number: "100 B", "1.5 KiB", "512
// MiB", "3 GiB".
func Format(n int64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	f, i := float64(n)/1024, 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	s := fmt.Sprintf("%.1f", f)
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		s = s[:len(s)-2]
	}
	return s + " " + units[i:i+1] + "iB"
}
