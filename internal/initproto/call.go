package initproto

import (
	"encoding/json"
	"fmt"
)

// WriteCall encodes c with json.Marshal and writes it as one frame. The
// front writes its calls through ClientConfig.WriteCall, which may frame
// calls with large arguments otherwise (see largecall.WriteCall).
func (fw *Writer) WriteCall(c Call) error {
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("encode frame: %w", err)
	}
	return fw.Write(b)
}

// DecodeCall decodes a call as json.Unmarshal does.
func DecodeCall(payload []byte) (Call, error) {
	var c Call
	err := json.Unmarshal(payload, &c)
	return c, err
}
