package httpapi

// A jsonNumber locates the parts of a checked JSON number: the digits before
// and after the decimal point and the exponent's digits.
type jsonNumber struct {
	neg                bool
	intStart, intEnd   int // the integer digits are b[intStart:intEnd]
	fracStart, fracEnd int // the fraction digits, if any
	expStart, expEnd   int // the exponent digits, if any
	expNeg             bool
}

// scanNumber checks the JSON number at i and returns its parts, with
// offsets relative to i, and the offset just past it.
func (d *decoder) scanNumber(i int) (jsonNumber, int, error) {
	b := d.buf
	start := i
	var n jsonNumber
	if b[i] == '-' {
		n.neg = true
		i++
	}
	n.intStart = i - start
	switch {
	case i >= len(b):
		return n, i, syntaxErrAt(i, "unexpected end of input in number")
	case b[i] == '0':
		i++
		if i < len(b) && isJSONDigit(b[i]) {
			return n, i, syntaxErrAt(i-1, "invalid number (leading zeros are not allowed)")
		}
	case isJSONDigit(b[i]):
		for i < len(b) && isJSONDigit(b[i]) {
			i++
		}
	default:
		return n, i, d.errChar(i, "in number (expecting a digit)")
	}
	n.intEnd = i - start
	n.fracStart, n.fracEnd = n.intEnd, n.intEnd
	if i < len(b) && b[i] == '.' {
		i++
		n.fracStart = i - start
		if i >= len(b) || !isJSONDigit(b[i]) {
			return n, i, d.errChar(i, "in number (expecting a digit after the decimal point)")
		}
		for i < len(b) && isJSONDigit(b[i]) {
			i++
		}
		n.fracEnd = i - start
	}
	n.expStart, n.expEnd = i-start, i-start
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			n.expNeg = b[i] == '-'
			i++
		}
		n.expStart = i - start
		if i >= len(b) || !isJSONDigit(b[i]) {
			return n, i, d.errChar(i, "in number (expecting a digit in the exponent)")
		}
		for i < len(b) && isJSONDigit(b[i]) {
			i++
		}
		n.expEnd = i - start
	}
	return n, i, nil
}

// int64 returns the exact value of the number whose text is b when it is
// an integer within int64, or the reason it is not. It never rounds and
// runs in time linear in len(b) whatever the exponent.
func (n jsonNumber) int64(b []byte) (int64, string) {
	const notInteger = "must be an integer"
	const tooBig = "must fit in a 64-bit signed integer"

	// The significant digits are the integer digits followed by the
	// fraction digits; the value is digits × 10^(exp-fracLen).
	intDigits := b[n.intStart:n.intEnd]
	fracDigits := b[n.fracStart:n.fracEnd]
	if len(fracDigits) == 0 && n.expStart == n.expEnd && len(intDigits) <= 18 {
		var u int64
		for _, c := range intDigits {
			u = u*10 + int64(c-'0')
		}
		if n.neg {
			u = -u
		}
		return u, ""
	}
	digit := func(k int) byte {
		if k < len(intDigits) {
			return intDigits[k]
		}
		return fracDigits[k-len(intDigits)]
	}
	total := len(intDigits) + len(fracDigits)
	first, last := 0, total-1
	for first < total && digit(first) == '0' {
		first++
	}
	if first == total {
		return 0, "" // zero, whatever its sign, fraction or exponent
	}
	for digit(last) == '0' {
		last--
	}

	// Saturate the exponent far beyond anything that could matter: a body
	// has fewer than 1<<40 digits.
	var exp int64
	for _, c := range b[n.expStart:n.expEnd] {
		if exp < 1<<40 {
			exp = exp*10 + int64(c-'0')
		}
	}
	if n.expNeg {
		exp = -exp
	}
	// value = digits[first..last] × 10^e10
	e10 := exp - int64(len(fracDigits)) + int64(total-1-last)
	sig := int64(last - first + 1)
	if e10 < 0 {
		return 0, notInteger // the last significant digit is not zero
	}
	if sig+e10 > 19 {
		return 0, tooBig // at least 10^19
	}
	var u uint64
	for k := first; k <= last; k++ {
		u = u*10 + uint64(digit(k)-'0')
	}
	for ; e10 > 0; e10-- {
		u *= 10
	}
	// u < 10^19 < 2^64.
	switch {
	case n.neg && u <= 1<<63:
		return int64(-u), ""
	case !n.neg && u <= 1<<63-1:
		return int64(u), ""
	}
	return 0, tooBig
}

func isJSONDigit(c byte) bool { return '0' <= c && c <= '9' }
