@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Java's `String` methods of the trigger language, on the strings' UTF-8 bytes.
///
/// Java compares strings by their UTF-16 units, with no Unicode normalization; Swift's `==` and
/// `hasPrefix` treat canonically equivalent strings as equal (a precomposed `é` equals `e` and a
/// combining accent). So these compare bytes: for valid Unicode text, equal, prefix, suffix and
/// substring on UTF-8 bytes are exactly equal, prefix, suffix and substring on UTF-16 units.
enum TriggerStrings {
    /// `a.equals(b)`.
    static func equals(_ a: String, _ b: String) -> Bool {
        TriggerNumbers.withUTF8(a) { x in
            TriggerNumbers.withUTF8(b) { y in
                x.count == y.count && (x.isEmpty || memoryEqual(x, 0, y, 0, count: x.count))
            }
        }
    }

    /// `s.startsWith(prefix)`.
    static func startsWith(_ s: String, _ prefix: String) -> Bool {
        TriggerNumbers.withUTF8(s) { x in
            TriggerNumbers.withUTF8(prefix) { p in
                p.count <= x.count && (p.isEmpty || memoryEqual(x, 0, p, 0, count: p.count))
            }
        }
    }

    /// `s.endsWith(suffix)`.
    static func endsWith(_ s: String, _ suffix: String) -> Bool {
        TriggerNumbers.withUTF8(s) { x in
            TriggerNumbers.withUTF8(suffix) { p in
                p.count <= x.count && (p.isEmpty || memoryEqual(x, x.count - p.count, p, 0, count: p.count))
            }
        }
    }

    /// `s.contains(part)`, in time linear in the two lengths (Knuth–Morris–Pratt for a part
    /// longer than 8 bytes, so that no input makes it quadratic).
    static func contains(_ s: String, _ part: String) -> Bool {
        TriggerNumbers.withUTF8(s) { x in
            TriggerNumbers.withUTF8(part) { p in
                if p.isEmpty { return true }
                if p.count > x.count { return false }
                if p.count <= 8 {
                    var i = 0
                    while i + p.count <= x.count {
                        if x[i] == p[0], memoryEqual(x, i, p, 0, count: p.count) { return true }
                        i += 1
                    }
                    return false
                }
                return knuthMorrisPratt(x, p)
            }
        }
    }

    /// `s.length()`: UTF-16 units, as Java counts them.
    static func length(_ s: String) -> Int {
        s.utf16.count
    }

    /// `a.equalsIgnoreCase(b)`: equal lengths, and each pair of characters equal, or equal after
    /// an upper-case mapping, or after an upper- then a lower-case mapping (Java's rule, per code
    /// point). The mappings are Unicode's one-to-one (simple) case mappings.
    static func equalsIgnoreCase(_ a: String, _ b: String) -> Bool {
        let ascii = TriggerNumbers.withUTF8(a) { x in
            TriggerNumbers.withUTF8(b) { y -> Bool? in
                guard x.count == y.count else { return a.utf16.count == b.utf16.count ? nil : false }
                for i in 0..<x.count {
                    let c = x[i], d = y[i]
                    if c >= 0x80 || d >= 0x80 { return nil }
                    if c == d { continue }
                    if c | 0x20 == d | 0x20, (c | 0x20) &- UInt8(ascii: "a") < 26 { continue }
                    return false
                }
                return true
            }
        }
        if let ascii { return ascii }
        guard a.utf16.count == b.utf16.count else { return false }
        var i = a.unicodeScalars.makeIterator()
        var j = b.unicodeScalars.makeIterator()
        while true {
            switch (i.next(), j.next()) {
            case (nil, nil):
                return true
            case (let c?, let d?):
                if c == d { continue }
                let uc = upper(c), ud = upper(d)
                if uc == ud || lower(uc) == lower(ud) { continue }
                return false
            default:
                return false
            }
        }
    }

    /// The simple upper-case mapping: Unicode's mapping when it is one scalar, else the scalar.
    private static func upper(_ c: Unicode.Scalar) -> Unicode.Scalar {
        single(c.properties.uppercaseMapping) ?? c
    }

    /// The simple lower-case mapping; U+0130 (İ) maps to `i`, as in Java, although its full
    /// mapping is two scalars.
    private static func lower(_ c: Unicode.Scalar) -> Unicode.Scalar {
        if c.value == 0x130 { return "i" }
        return single(c.properties.lowercaseMapping) ?? c
    }

    private static func single(_ s: String) -> Unicode.Scalar? {
        var it = s.unicodeScalars.makeIterator()
        guard let first = it.next(), it.next() == nil else { return nil }
        return first
    }

    @inline(__always)
    private static func memoryEqual(_ x: UnsafeBufferPointer<UInt8>, _ i: Int,
                                    _ y: UnsafeBufferPointer<UInt8>, _ j: Int, count: Int) -> Bool {
        guard let xb = x.baseAddress, let yb = y.baseAddress else { return count == 0 }
        return ByteComparison.compareMemory(xb + i, yb + j, count: count) == 0
    }

    private static func knuthMorrisPratt(_ x: UnsafeBufferPointer<UInt8>, _ p: UnsafeBufferPointer<UInt8>) -> Bool {
        // failure[k]: the length of the longest proper border of p[0...k].
        var failure = [Int](repeating: 0, count: p.count)
        var k = 0
        for q in 1..<max(p.count, 1) {
            while k > 0, p[k] != p[q] { k = failure[k - 1] }
            if p[k] == p[q] { k += 1 }
            failure[q] = k
        }
        var matched = 0
        for c in x {
            while matched > 0, p[matched] != c { matched = failure[matched - 1] }
            if p[matched] == c { matched += 1 }
            if matched == p.count { return true }
        }
        return false
    }
}
