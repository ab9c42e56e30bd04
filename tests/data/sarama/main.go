package main

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/IBM/sarama"
)

// Each input line: "<partitions> <hex key>" ("-" for an absent key); each output line: one partition per partitioner.
func main() {
	makers := []sarama.PartitionerConstructor{sarama.NewHashPartitioner, sarama.NewReferenceHashPartitioner,
		sarama.NewConsistentCRCHashPartitioner, sarama.NewMurmur2Partitioner}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for in.Scan() {
		f := strings.Fields(in.Text())
		n, _ := strconv.Atoi(f[0])
		var key sarama.Encoder
		if f[1] != "-" {
			b, _ := hex.DecodeString(strings.TrimPrefix(f[1], "x"))
			key = sarama.ByteEncoder(b)
		}
		parts := []string{}
		for _, mk := range makers {
			p, err := mk("t").Partition(&sarama.ProducerMessage{Topic: "t", Key: key}, int32(n))
			if err != nil {
				parts = append(parts, "!")
			} else if key == nil {
				parts = append(parts, "-")
			} else {
				parts = append(parts, strconv.Itoa(int(p)))
			}
		}
		fmt.Fprintln(out, strings.Join(parts, " "))
	}
}
