import Crypto
@_spi(Layers) import StrataFormat

/// A 256-bit key that seals a store's files with AES-256-GCM (``StoreOptions/encryptionKey``).
///
/// Every log record, segment block and manifest of a store opened with a key is sealed with a key
/// derived from it for that one file (FORMAT.md "Encryption"): no value, key or collection name
/// is written in clear, and a flipped bit is found before a byte is decoded. The key itself is
/// never written; each file carries only its ``identifier``, so that a wrong key is told apart
/// from damage.
///
/// ```swift
/// let key = try EncryptionKey(bytes: keyBytes)          // 32 bytes, from a keychain or a KMS
/// let store = try Store.open(at: url, options: StoreOptions(encryptionKey: key))
/// ```
///
/// Keep the key somewhere else than the store: a store whose key is lost cannot be read.
public struct EncryptionKey: Sendable, Equatable, CustomStringConvertible {
    /// The length of a key in bytes.
    public static let byteCount = 32
    /// The length of ``identifier`` in bytes.
    package static let identifierSize = 16

    package var symmetricKey: SymmetricKey { shared.key }
    private let shared: SharedSymmetricKey
    /// The first 16 bytes of HMAC-SHA-256(key, "Strata key identifier v1"): written in every
    /// encrypted file so that a reader tells a wrong key from a damaged file. It reveals nothing
    /// of the key.
    public let identifier: [UInt8]

    /// A key made of exactly 32 bytes.
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` (`"encryptionKey"`) for any
    ///   other length.
    public init(bytes: some Sequence<UInt8>) throws {
        let b = Array(bytes)
        guard b.count == Self.byteCount else {
            throw StrataError.invalidArgument(argument: "encryptionKey",
                                              reason: "an encryption key is \(Self.byteCount) bytes, not \(b.count)")
        }
        self.init(SymmetricKey(data: b))
    }

    /// A new random key, from the system's secure random number generator.
    public static func random() -> EncryptionKey {
        EncryptionKey(SymmetricKey(size: .bits256))
    }

    private init(_ key: SymmetricKey) {
        shared = SharedSymmetricKey(key)
        let mac = HMAC<SHA256>.authenticationCode(for: Array("Strata key identifier v1".utf8), using: key)
        identifier = Array(Array(mac).prefix(Self.identifierSize))
    }

    /// The key's bytes, for storing it in a keychain.
    public var bytes: [UInt8] { symmetricKey.withUnsafeBytes { Array($0) } }

    public static func == (a: EncryptionKey, b: EncryptionKey) -> Bool { a.identifier == b.identifier }

    /// Names the key by its identifier, never by its bytes.
    public var description: String {
        "EncryptionKey(identifier: \(identifier.map { String($0, radix: 16).leftPadded(2) }.joined()))"
    }
}

extension String {
    fileprivate func leftPadded(_ n: Int) -> String { count >= n ? self : String(repeating: "0", count: n - count) + self }
}
