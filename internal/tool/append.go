package tool

import (
	"encoding/json"
	"slices"
	"strconv"
)

// AppendJSON appends r encoded as encoding/json encodes it, except that
// '<', '>' and '&' are left as they are rather than escaped. It uses no
// reflection. It does not check again the JSON that Marshaler methods and
// raw structured content already are. Read results are encoded field by
// field; other structured content goes through encoding/json.
func (r Result) AppendJSON(b []byte) ([]byte, error) {
	b = slices.Grow(b, r.sizeHint())
	b = append(b, `{"content":`...)
	if r.Content == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, c := range r.Content {
			if i > 0 {
				b = append(b, ',')
			}
			b = c.appendJSON(b)
		}
		b = append(b, ']')
	}
	if r.StructuredContent != nil {
		b = append(b, `,"structuredContent":`...)
		switch sc := r.StructuredContent.(type) {
		case ReadOutput:
			b = sc.appendJSON(b)
		case json.RawMessage:
			if len(sc) == 0 {
				sc = json.RawMessage("null")
			}
			b = append(b, sc...)
		default:
			enc, err := json.Marshal(sc)
			if err != nil {
				return nil, err
			}
			b = append(b, enc...)
		}
	}
	if r.IsError {
		b = append(b, `,"isError":true`...)
	}
	return append(b, '}'), nil
}

// sizeHint is about the length of r encoded, when its text needs few
// escapes.
func (r Result) sizeHint() int {
	n := 128
	for _, c := range r.Content {
		n += len(c.Text) + len(c.Data) + 32
	}
	switch sc := r.StructuredContent.(type) {
	case ReadOutput:
		n += len(sc.Content) + 128
	case json.RawMessage:
		n += len(sc)
	}
	return n + n/16
}

// appendJSON appends c as its MarshalJSON method writes it.
func (c Content) appendJSON(b []byte) []byte {
	b = append(b, `{"type":`...)
	b = AppendQuoted(b, c.Type)
	if c.Type == "image" {
		b = append(b, `,"data":`...)
		b = AppendQuoted(b, c.Data)
		b = append(b, `,"mimeType":`...)
		b = AppendQuoted(b, c.MimeType)
	} else {
		b = append(b, `,"text":`...)
		b = AppendQuoted(b, c.Text)
	}
	return append(b, '}')
}

// appendJSON appends o with the fields, order and omissions of its
// struct tags.
func (o ReadOutput) appendJSON(b []byte) []byte {
	b = append(b, `{"content":`...)
	b = AppendQuoted(b, o.Content)
	b = append(b, `,"encoding":`...)
	b = AppendQuoted(b, o.Encoding)
	b = append(b, `,"mime_type":`...)
	b = AppendQuoted(b, o.MimeType)
	if o.LineCount != nil {
		b = strconv.AppendInt(append(b, `,"line_count":`...), int64(*o.LineCount), 10)
	}
	if o.Truncated != nil {
		b = strconv.AppendBool(append(b, `,"truncated":`...), *o.Truncated)
	}
	b = appendNonZero(b, `,"total_lines":`, int64(o.TotalLines))
	b = appendNonZero(b, `,"next_offset":`, int64(o.NextOffset))
	if o.Size != nil {
		b = strconv.AppendInt(append(b, `,"size":`...), *o.Size, 10)
	}
	b = appendNonZero(b, `,"width":`, int64(o.Width))
	b = appendNonZero(b, `,"height":`, int64(o.Height))
	b = appendNonZero(b, `,"original_width":`, int64(o.OriginalWidth))
	b = appendNonZero(b, `,"original_height":`, int64(o.OriginalHeight))
	if o.WasResized != nil {
		b = strconv.AppendBool(append(b, `,"was_resized":`...), *o.WasResized)
	}
	return append(b, '}')
}

// appendNonZero appends the member key (with its leading comma) and v,
// unless v is 0 (omitempty).
func appendNonZero(b []byte, key string, v int64) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendInt(append(b, key...), v, 10)
}
