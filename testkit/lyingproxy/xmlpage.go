package lyingproxy

import (
	"bytes"
	"encoding/xml"
)

// xmlElem is one element kept as it came: its name, attributes and raw
// content. S3's and Azure's LIST pages are decoded to these and encoded
// back, so what the proxy does not change passes through unchanged.
type xmlElem struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Inner   []byte     `xml:",innerxml"`
}

// xmlDoc is a root element and its children.
type xmlDoc struct {
	XMLName  xml.Name
	Attrs    []xml.Attr `xml:",any,attr"`
	Children []xmlElem  `xml:",any"`
}

func decodeXMLDoc(body []byte) (*xmlDoc, error) {
	var d xmlDoc
	if err := xml.Unmarshal(body, &d); err != nil {
		return nil, err
	}
	// The xmlns attribute is kept among Attrs: drop the resolved
	// namespace so that encoding does not repeat it on every element.
	d.XMLName.Space = ""
	for i := range d.Children {
		d.Children[i].XMLName.Space = ""
	}
	return &d, nil
}

func (d *xmlDoc) encode() ([]byte, error) {
	out, err := xml.Marshal(d)
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), out...), nil
}

// decodeChildren reads the elements of raw content (Azure's Blobs).
func decodeChildren(inner []byte) ([]xmlElem, error) {
	var d xmlDoc
	if err := xml.Unmarshal(append(append([]byte("<x>"), inner...), "</x>"...), &d); err != nil {
		return nil, err
	}
	for i := range d.Children {
		d.Children[i].XMLName.Space = ""
	}
	return d.Children, nil
}

// encodeChildren is decodeChildren's inverse.
func encodeChildren(elems []xmlElem) ([]byte, error) {
	var b bytes.Buffer
	for _, e := range elems {
		out, err := xml.Marshal(e)
		if err != nil {
			return nil, err
		}
		b.Write(out)
	}
	return b.Bytes(), nil
}

// childText is the text of the first child called name of raw content.
func childText(inner []byte, name string) string {
	d := xml.NewDecoder(bytes.NewReader(inner))
	depth := 0
	for {
		tok, err := d.Token()
		if err != nil {
			return ""
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth == 1 && t.Name.Local == name {
				var s string
				if d.DecodeElement(&s, &t) != nil {
					return ""
				}
				return s
			}
		case xml.EndElement:
			depth--
		}
	}
}

// textElem is <name>text</name>, text escaped.
func textElem(name, text string) xmlElem {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(text))
	return xmlElem{XMLName: xml.Name{Local: name}, Inner: b.Bytes()}
}

// closingTagAt is where the last closing tag of body begins: whitespace
// may go there.
func closingTagAt(body []byte) int {
	return bytes.LastIndex(body, []byte("</"))
}
