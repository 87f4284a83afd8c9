// heap.go - a Go program for make compat, built with CGO_ENABLED=0: a static binary,
// which superpage run cannot preload and keeps promoted by its watch instead. Its
// heap (about 256 MiB of slices, a map) is filled and summed over and over; the output
// depends only on the arithmetic.
//
// Then it grows by 16 MiB and sums 20 passes more (the harness's coverage is that of
// its first sample at the most memory: this puts it after a round of superpage run's
// watch, which collapses memory once it is touched). With HEAP_HUGE_WANT=PCT in its
// environment each of the two goes on, at most 600 more passes, until PCT% of its
// anonymous memory is on huge pages (smaps_rollup), and says on stderr where it got:
// "heap: P% of N kB anonymous on huge pages after K passes".
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

const blockWords = 512 * 1024 // 4 MiB of uint64

func fill(blocks [][]uint64, seed uint64) {
	for i := range blocks {
		b := blocks[i]
		x := seed + uint64(i)*0x9e3779b97f4a7c15
		for k := range b {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			b[k] = x
		}
	}
}

func pass(blocks [][]uint64, r int) uint64 {
	var s uint64
	for i, b := range blocks {
		for k := (r + i) % 8; k < len(b); k += 8 {
			s += b[k] ^ uint64(k)
		}
	}
	return s
}

// The share of anonymous memory on huge pages, in percent, and the anonymous kB.
func hugeShare() (float64, uint64) {
	f, err := os.Open("/proc/self/smaps_rollup")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	var anon, huge uint64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		v, _ := strconv.ParseUint(fields[1], 10, 64)
		switch fields[0] {
		case "Anonymous:":
			anon = v
		case "AnonHugePages:":
			huge = v
		}
	}
	if anon == 0 {
		return 0, 0
	}
	return 100 * float64(huge) / float64(anon), anon
}

func main() {
	blocks := make([][]uint64, 64)
	for i := range blocks {
		blocks[i] = make([]uint64, blockWords)
	}
	fill(blocks, 1)
	index := make(map[uint64]int, 1<<18)
	for i := 0; i < 1<<18; i++ {
		index[blocks[i%64][i*7%blockWords]] = i
	}
	var sum uint64
	for r := 0; r < 40; r++ {
		sum = sum*31 + pass(blocks, r)
	}
	fmt.Printf("sum %d entries %d\n", sum, len(index))

	// (without HEAP_HUGE_WANT: want 0, each wait its least passes, nothing said)
	want, err := strconv.ParseFloat(os.Getenv("HEAP_HUGE_WANT"), 64)
	say := err == nil
	if !say {
		want = 0
	}
	k := 0
	wait := func(least int) {
		got, anon := hugeShare()
		n := 0
		for ; (got < want || n < least) && n < least+600; n++ {
			sum += pass(blocks, k+n)
			got, anon = hugeShare()
		}
		k += n
		if say {
			fmt.Fprintf(os.Stderr, "heap: %.1f%% of %d kB anonymous on huge pages after %d passes\n", got, anon, k)
		}
	}
	wait(0)
	more := make([][]uint64, 4)
	for i := range more {
		more[i] = make([]uint64, blockWords)
	}
	fill(more, 2)
	blocks = append(blocks, more...)
	wait(20) // (sampled at its new size, every 0.2 s)
	if sum == 0 {
		fmt.Println("") // (keeps the passes from being left out)
	}
}
