@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The text of a trigger expression being compiled, and the errors that point into it.
///
/// Positions are kept as UTF-8 byte offsets while compiling and reported as 1-based character
/// positions (Swift `Character`s, so what a person counts), the end of the text being one past
/// its last character.
struct TriggerSource {
    let text: String
    let bytes: [UInt8]

    init(_ text: String) {
        self.text = text
        self.bytes = Array(text.utf8)
    }

    /// The 1-based position of the character holding byte `offset` (one past the last
    /// character for the end).
    func position(ofByte offset: Int) -> Int {
        guard offset < bytes.count else { return text.count + 1 }
        var position = 0
        let utf8 = text.utf8
        for index in text.indices {
            guard utf8.distance(from: utf8.startIndex, to: index) <= offset else { break }
            position += 1
        }
        return max(position, 1)
    }

    /// `.invalidArgument` naming the position of byte `offset` and what was wrong there.
    func error(at offset: Int, _ message: String) -> StrataError {
        .invalidArgument(argument: "triggerExpression", reason: "trigger expression at character \(position(ofByte: offset)): \(message)")
    }

    /// The text of bytes `range`, shortened to about 24 characters, for "found …" in messages.
    func excerpt(_ range: Range<Int>) -> String {
        let lower = max(0, min(range.lowerBound, bytes.count))
        let upper = max(lower, min(range.upperBound, bytes.count))
        let s = String(decoding: bytes[lower..<upper], as: UTF8.self)
        return s.count > 24 ? String(s.prefix(24)) + "…" : s
    }
}
