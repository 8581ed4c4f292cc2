@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The stored form of a ``SecurityPolicy``: one record at key `(16, 0)` (FORMAT.md §17).
///
/// ```
/// policy   = u8 layout (1) ‖ varint version ‖ varint n ‖ role × n ‖ varint m ‖ principal × m ‖ names
/// role     = string name ‖ varint globalBits ‖ varint k ‖ (string path ‖ varint bits) × k ‖ names
/// principal = string name ‖ names
/// names    = varint count ‖ string × count
/// string   = varint byteCount ‖ UTF-8
/// ```
/// Roles, paths, principals and every list of names are in strictly increasing byte order of
/// their UTF-8, so a policy has exactly one encoding; bits are ``Permission/bit`` values.
package enum SecurityPolicyRecord {
    static let layoutVersion: UInt8 = 1

    /// The key of the policy record.
    package static let key: [UInt8] = {
        var e = TupleKeyEncoder()
        e.append(Keyspace.security.id)
        e.append(UInt64(0))
        return e.bytes
    }()

    package static func encode(_ policy: SecurityPolicy) -> [UInt8] {
        var out: [UInt8] = [layoutVersion]
        Varint.append(policy.version, to: &out)
        let roles = policy.roles.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        Varint.append(roles.count, to: &out)
        for (name, role) in roles {
            Varint.appendLengthPrefixed(name, to: &out)
            Varint.append(UInt64(PermissionSet(role.global).bits), to: &out)
            let paths = role.paths.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            Varint.append(paths.count, to: &out)
            for (path, permissions) in paths {
                Varint.appendLengthPrefixed(path, to: &out)
                Varint.append(UInt64(PermissionSet(permissions).bits), to: &out)
            }
            appendNames(role.includedRoles, to: &out)
        }
        let principals = policy.principals.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        Varint.append(principals.count, to: &out)
        for (name, roles) in principals {
            Varint.appendLengthPrefixed(name, to: &out)
            appendNames(roles, to: &out)
        }
        appendNames(policy.defaultRoles, to: &out)
        return out
    }

    private static func appendNames(_ names: Set<String>, to out: inout [UInt8]) {
        Varint.append(names.count, to: &out)
        for name in names.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            Varint.appendLengthPrefixed(name, to: &out)
        }
    }

    /// Decodes a stored policy, refusing anything but the one encoding of a valid policy.
    ///
    /// - Throws: ``StrataError/unsupportedFormatVersion(file:found:)`` for another layout;
    ///   ``StrataError/corrupted(file:offset:reason:)`` naming the offset of what is wrong.
    package static func decode(_ bytes: [UInt8]) throws -> SecurityPolicy {
        let file = "security policy \(TupleKey.describe(key))"
        guard let layout = bytes.first else { throw StrataError.corrupted(file: file, offset: 0, reason: "empty record") }
        guard layout == layoutVersion else { throw StrataError.unsupportedFormatVersion(file: file, found: UInt32(layout)) }
        return try ByteReader.read(bytes, file: file, offset: 1) { reader in
            var policy = SecurityPolicy()
            policy.version = try reader.varint("version")
            var previous: String?
            for _ in 0..<(try reader.count("role count")) {
                let name = try reader.string("role name", after: &previous)
                var role = Role()
                role.global = try reader.permissions("global permissions of role \(name.debugDescription)")
                var previousPath: String?
                for _ in 0..<(try reader.count("path count")) {
                    let path = try reader.string("path", after: &previousPath)
                    role.paths[path] = try reader.permissions("permissions of role \(name.debugDescription) on \(path.debugDescription)")
                }
                role.includedRoles = try reader.names("roles included by \(name.debugDescription)")
                policy.roles[name] = role
            }
            previous = nil
            for _ in 0..<(try reader.count("principal count")) {
                let name = try reader.string("principal name", after: &previous)
                policy.principals[name] = try reader.names("roles of principal \(name.debugDescription)")
            }
            policy.defaultRoles = try reader.names("default roles")
            try reader.expectEnd("the policy")
            do { try policy.validate() } catch StrataError.invalidArgument(_, let reason) { throw reader.corrupted(reason) }
            return policy
        }
    }
}

/// The policy's fields that ``ByteReader`` does not know.
private extension ByteReader {
    /// A string that must sort after `previous` (then set to it).
    mutating func string(_ what: String, after previous: inout String?) throws -> String {
        let start = offset
        let s = try string(what)
        if let p = previous, !p.utf8.lexicographicallyPrecedes(s.utf8) {
            throw corrupted(at: start, "\(what) \(s.debugDescription) is not after \(p.debugDescription)")
        }
        previous = s
        return s
    }

    mutating func permissions(_ what: String) throws -> Set<Permission> {
        let v = try varint(what)
        guard v & ~UInt64(PermissionSet.known.bits) == 0 else {
            throw corrupted("\(what): unknown permission bits 0x\(String(v, radix: 16))")
        }
        return PermissionSet(bits: UInt32(v)).permissions
    }

    mutating func names(_ what: String) throws -> Set<String> {
        var names = Set<String>()
        var previous: String?
        for _ in 0..<(try count(what)) { names.insert(try string("name in \(what)", after: &previous)) }
        return names
    }
}
