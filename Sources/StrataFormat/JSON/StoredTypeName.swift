/// The identity of a `Codable` value type as a collection's catalog entry stores it (FORMAT.md
/// §13.2), and the rule that tells whether a stored name is a type's.
///
///     Codable:.<identity>      written by this build: ``StoredValue/storedTypeName``, or the
///                              type's reflecting name with every module qualifier left out
///     Codable:<module>.<name>  written before (String(reflecting:)); still accepted
///
/// The leading `.` keeps the two forms apart: a reflecting name starts with a module name or `(`.
package enum StoredTypeName {
    /// What every stored name of a `Codable` (non-native) type starts with.
    package static let codablePrefix = "Codable:"
    /// What a name written by this build starts with.
    package static let identityPrefix = "Codable:."

    /// The stored name of `type`: `Codable:.` followed by its identity.
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` if the type names an empty identity.
    package static func of(_ type: Any.Type) throws -> String {
        if let named = type as? any StoredValue.Type {
            let name = named.storedTypeName
            guard !name.isEmpty else {
                throw StrataError.invalidArgument(argument: "storedTypeName", reason: "\(String(reflecting: type)).storedTypeName is empty")
            }
            return identityPrefix + name
        }
        return identityPrefix + withoutModules(String(reflecting: type))
    }

    /// Whether a collection whose entry stores `stored` holds values of `type`: its name is
    /// `stored`, or `stored` is the name an earlier build wrote for the same identity (the
    /// reflecting name whose module-less form is the identity, or which a ``StoredValue`` names
    /// exactly).
    package static func matches(stored: String, type: Any.Type, name: String) -> Bool {
        if stored == name { return true }
        guard name.hasPrefix(identityPrefix), stored.hasPrefix(codablePrefix), !stored.hasPrefix(identityPrefix) else {
            return false
        }
        let identity = name.dropFirst(identityPrefix.count)
        let legacy = String(stored.dropFirst(codablePrefix.count))
        if withoutModules(legacy)[...] == identity { return true }
        return type is any StoredValue.Type && legacy[...] == identity
    }

    /// `String(reflecting:)`'s spelling of a type with its module qualifiers left out: the first
    /// component of every dotted path (`MyApp.Outer.Inner<Swift.Int>` → `Outer.Inner<Int>`,
    /// `(a: Swift.Int, MyApp.P)` → `(a: Int, P)`).
    package static func withoutModules(_ reflecting: String) -> String {
        var out = ""
        out.reserveCapacity(reflecting.utf8.count)
        var rest = Substring(reflecting)
        var startsPath = true
        while let c = rest.first {
            if Self.delimiters.contains(c) {
                out.append(c)
                startsPath = c != "." && c != ")"
                rest = rest.dropFirst()
                continue
            }
            let word = rest.prefix { !Self.delimiters.contains($0) }
            rest = rest.dropFirst(word.count)
            if startsPath, rest.first == "." {
                rest = rest.dropFirst()
            } else {
                out += word
            }
            startsPath = false
        }
        return out
    }

    private static let delimiters: Set<Character> = [".", "<", ">", "(", ")", ",", " ", ":", "[", "]"]
}
