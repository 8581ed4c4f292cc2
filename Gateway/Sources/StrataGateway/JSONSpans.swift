/// A JSON text that `JSONParser` accepted, with the byte ranges of its values, so that the
/// values a client sent (a message, its meta, an event's value) are kept and sent back as the
/// exact text that arrived, never re-serialized (PROTOCOL.md "Values"). The parser checks the
/// text; the spans only walk its structure, in the parsed tree's order.
struct JSONSpans {
    let bytes: [UInt8]
    /// The parsed tree of `bytes`.
    let tree: JSON

    /// Parses `bytes` with the gateway's parser and limits; throws 400 naming `what`.
    init(_ bytes: [UInt8], what: String) throws(GatewayError) {
        self.bytes = bytes
        do {
            tree = try JSONParser.parse(bytes)
        } catch {
            throw .badRequest("\(what): \(error)")
        }
    }

    /// The whole text's value.
    var root: Range<Int> {
        var start = 0
        skipWhitespace(&start)
        return start..<valueEnd(start)
    }

    /// The text of a span.
    func text(_ span: Range<Int>) -> String {
        String(decoding: bytes[span], as: UTF8.self)
    }

    /// The elements of the array that is the root object's member `name`, with their spans: a
    /// 400 naming `what` unless the root is an object with that member an array of at least one
    /// element, a 413 above `limit` elements.
    func list(_ name: String, limit: Int, what: String) throws(GatewayError) -> [(value: JSON, span: Range<Int>)] {
        guard case let .object(members) = tree,
              let k = members.firstIndex(where: { $0.0 == name }), case let .array(list) = members[k].1
        else {
            throw .badRequest("\(what) must be an object with a \(name) array")
        }
        guard !list.isEmpty else { throw .badRequest("\(name) is empty (1 to \(limit) \(name))") }
        guard list.count <= limit else {
            throw .tooLarge("the request has \(list.count) \(name), over the limit of \(limit) per request")
        }
        return Array(zip(list, try elements(ofMember: k, count: list.count)))
    }

    /// The spans of the elements of the array that is the root object's member number `member`,
    /// which the tree says has `count` elements (400 if the walk disagrees, never a crash).
    func elements(ofMember member: Int, count: Int) throws(GatewayError) -> [Range<Int>] {
        let members = memberValues(root)
        guard member < members.count else { throw .badRequest("the body could not be read") }
        let spans = elements(members[member])
        guard spans.count == count else { throw .badRequest("the body could not be read") }
        return spans
    }

    /// The spans of the elements of the array at `span`, in order.
    func elements(_ span: Range<Int>) -> [Range<Int>] { children(span, named: false) }

    /// The spans of the member values of the object at `span`, in order (the names are the
    /// tree's).
    func memberValues(_ span: Range<Int>) -> [Range<Int>] { children(span, named: true) }

    /// The spans of the values inside the array or object at `span`; `named`: each is preceded
    /// by a member name and `:`, skipped.
    private func children(_ span: Range<Int>, named: Bool) -> [Range<Int>] {
        var spans: [Range<Int>] = []
        var i = span.lowerBound + 1
        skipWhitespace(&i)
        guard i < span.upperBound, bytes[i] != UInt8(ascii: named ? "}" : "]") else { return spans }
        while i < span.upperBound {
            if named {
                i = valueEnd(i)  // the name
                skipWhitespace(&i)
                i += 1  // ':'
                skipWhitespace(&i)
            }
            let end = valueEnd(i)
            spans.append(i..<end)
            i = end
            skipWhitespace(&i)
            guard i < span.upperBound, bytes[i] == UInt8(ascii: ",") else { break }
            i += 1
            skipWhitespace(&i)
        }
        return spans
    }

    private func skipWhitespace(_ i: inout Int) {
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x09 || bytes[i] == 0x0A || bytes[i] == 0x0D { i += 1 }
    }

    /// The index after the value that starts at `start`.
    private func valueEnd(_ start: Int) -> Int {
        var i = start
        guard i < bytes.count else { return i }
        switch bytes[i] {
        case UInt8(ascii: "\""):
            i += 1
            while i < bytes.count, bytes[i] != UInt8(ascii: "\"") {
                i += bytes[i] == UInt8(ascii: "\\") ? 2 : 1
            }
            return min(i + 1, bytes.count)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            while i < bytes.count {
                switch bytes[i] {
                case UInt8(ascii: "\""):
                    i = valueEnd(i)
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return i + 1 }
                default: break
                }
                i += 1
            }
            return i
        default:
            while i < bytes.count {
                switch bytes[i] {
                case UInt8(ascii: ","), UInt8(ascii: "]"), UInt8(ascii: "}"), 0x20, 0x09, 0x0A, 0x0D: return i
                default: i += 1
                }
            }
            return i
        }
    }
}
