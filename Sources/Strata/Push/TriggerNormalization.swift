@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

extension PushTrigger {
    /// `expression` with every named argument `${name}` of a field in `fields` rewritten to its
    /// indexed form `$[n]` (1-based, the first field of that name), as Lightstreamer reports a
    /// trigger; everything else — spacing, `$[n]` arguments, string literals (a `${name}` inside
    /// one is text, not a field) — is left as it is. This is the text
    /// `PushOptions.acceptedTriggers` patterns are matched against.
    ///
    /// ```swift
    /// PushTrigger.normalized("Double.parseDouble(${last_price}) > 500.0",
    ///                        fields: ["stock_name", "last_price"])
    /// // "Double.parseDouble($[2]) > 500.0"
    /// ```
    ///
    /// It never fails: an expression that does not compile keeps its unknown names as written.
    public static func normalized(_ expression: String, fields: [String]) -> String {
        let b = Array(expression.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(b.count)
        var i = 0
        while i < b.count {
            let c = b[i]
            if c == UInt8(ascii: "\"") || c == UInt8(ascii: "'") {
                // A literal, through its closing quote (or the end of its line), escapes included.
                out.append(c)
                i += 1
                while i < b.count {
                    let d = b[i]
                    out.append(d)
                    i += 1
                    if d == UInt8(ascii: "\\"), i < b.count {
                        out.append(b[i])
                        i += 1
                    } else if d == c || d == 0x0A || d == 0x0D {
                        break
                    }
                }
                continue
            }
            if c == UInt8(ascii: "$"), i + 1 < b.count, b[i + 1] == UInt8(ascii: "{"),
               let close = b[(i + 2)...].firstIndex(of: UInt8(ascii: "}")),
               let index = fields.firstIndex(of: String(decoding: b[(i + 2)..<close], as: UTF8.self)) {
                out.append(contentsOf: "$[\(index + 1)]".utf8)
                i = close + 1
                continue
            }
            out.append(c)
            i += 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Whether some pattern of `patterns` (regular expressions) matches the whole of
    /// `normalized` (a trigger as ``normalized(_:fields:)`` writes it); false for no patterns.
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` naming a pattern that is not a regular
    ///   expression (every pattern is checked, whichever matches).
    static func accepts(_ normalized: String, patterns: [String]) throws -> Bool {
        var regexes: [Regex<AnyRegexOutput>] = []
        for pattern in patterns {
            do {
                regexes.append(try Regex(pattern))
            } catch {
                throw StrataError.invalidArgument(argument: "acceptedTriggers", reason: "accepted trigger pattern '\(pattern)' is not a regular expression: \(error)")
            }
        }
        for (regex, pattern) in zip(regexes, patterns) {
            do {
                if try regex.wholeMatch(in: normalized) != nil { return true }
            } catch {
                throw StrataError.invalidArgument(argument: "acceptedTriggers", reason: "accepted trigger pattern '\(pattern)' failed on '\(normalized)': \(error)")
            }
        }
        return false
    }
}
