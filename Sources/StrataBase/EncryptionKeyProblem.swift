/// Why an encryption key does not fit a store (``StrataError/encryptionKey(store:problem:)``).
public enum EncryptionKeyProblem: String, Sendable, Equatable, CustomStringConvertible {
    /// The store is encrypted, and no key was given.
    case missingKey
    /// The store is encrypted with another key.
    case wrongKey
    /// A key was given, but the store is not encrypted.
    case storeNotEncrypted

    public var description: String {
        switch self {
        case .missingKey: return "the store is encrypted and no key was given"
        case .wrongKey: return "the store is encrypted with another key"
        case .storeNotEncrypted: return "a key was given for a store that is not encrypted"
        }
    }
}
