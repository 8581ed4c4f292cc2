import Crypto
@_spi(Layers) import StrataFormat

/// The AES-256-GCM key of one encrypted file, and how its nonces are made (FORMAT.md 8.1,
/// "Encryption").
///
/// The file key is HKDF-SHA-256 of the store's ``EncryptionKey``, with the file's random 16-byte
/// `salt` as HKDF salt and `"Strata file key v1" ‖ purpose ‖ fileNumber:u64` as info. A nonce is
/// the sealed unit's byte position in its file, `position:u64 ‖ purpose:u8 ‖ 00 00 00`.
///
/// Invariant: no (file key, nonce) pair ever seals two different plaintexts. Within one file a
/// position is written once (files are written front to back, never changed, and a file is
/// never reopened for writing: after a crash or a failed write a *new* file is made). Across
/// files the keys differ: every file creation draws a new salt, so even a file number used twice
/// (a crash before the manifest recorded it, a rewrite under the same name, a backup's copy, a
/// compaction's output) gets another key, except with the probability of two random 128-bit
/// salts colliding.
package struct FileCipher: Sendable {
    /// What a file is; part of the key derivation and of every nonce.
    package enum Purpose: UInt8, Sendable {
        case log = 0x4C       // "L"
        case segment = 0x53   // "S"
        case manifest = 0x4D  // "M"
    }

    package static let saltSize = 16
    package static let tagSize = 16

    package let purpose: Purpose
    package let keyIdentifier: [UInt8]
    package let salt: [UInt8]
    private var fileKey: SymmetricKey { sharedKey.key }
    private let sharedKey: SharedSymmetricKey

    /// The cipher of an existing file, from the salt in its header.
    /// REQUIRES: `salt.count == saltSize`.
    package init(key: EncryptionKey, purpose: Purpose, fileNumber: UInt64, salt: [UInt8]) {
        precondition(salt.count == Self.saltSize)
        self.purpose = purpose
        self.keyIdentifier = key.identifier
        self.salt = salt
        var info = Array("Strata file key v1".utf8)
        info.append(purpose.rawValue)
        LittleEndian.append(fileNumber, to: &info)
        sharedKey = SharedSymmetricKey(HKDF<SHA256>.deriveKey(inputKeyMaterial: key.symmetricKey, salt: salt, info: info, outputByteCount: 32))
    }

    /// The cipher of a new file, with a new random salt.
    package static func forNewFile(key: EncryptionKey, purpose: Purpose, fileNumber: UInt64) -> FileCipher {
        var rng = SystemRandomNumberGenerator()
        let salt = (0..<saltSize).map { _ in UInt8.random(in: .min ... .max, using: &rng) }
        return FileCipher(key: key, purpose: purpose, fileNumber: fileNumber, salt: salt)
    }

    /// The file key's bytes (FORMAT.md 11.4 prints the example's).
    package var fileKeyBytesForSpec: [UInt8] { fileKey.withUnsafeBytes { Array($0) } }

    private func nonce(_ position: UInt64) -> AES.GCM.Nonce {
        var n: [UInt8] = []
        n.reserveCapacity(12)
        LittleEndian.append(position, to: &n)
        n.append(purpose.rawValue)
        n.append(contentsOf: [0, 0, 0])
        // A 12-byte nonce is always accepted.
        return try! AES.GCM.Nonce(data: n)
    }

    /// Seals `plaintext`, the unit at byte `position` of the file, and appends ciphertext then
    /// tag (`plaintext.count + tagSize` bytes) to `out`. `header` is authenticated, not sealed.
    package func seal(_ plaintext: UnsafeRawBufferPointer, position: UInt64, header: UnsafeRawBufferPointer,
                      to out: inout [UInt8]) {
        // Sealing with a valid key and nonce cannot fail.
        let box = try! AES.GCM.seal(plaintext, using: fileKey, nonce: nonce(position), authenticating: header)
        out.append(contentsOf: box.ciphertext)
        out.append(contentsOf: box.tag)
    }

    /// Checks the tag of `sealed` (ciphertext then tag), the unit at byte `position`, and returns
    /// its plaintext; nil when the tag does not match (damage, or bytes moved from elsewhere).
    package func open(_ sealed: UnsafeRawBufferPointer, position: UInt64, header: UnsafeRawBufferPointer) -> [UInt8]? {
        guard sealed.count >= Self.tagSize else { return nil }
        let split = sealed.count - Self.tagSize
        guard let box = try? AES.GCM.SealedBox(nonce: nonce(position),
                                               ciphertext: UnsafeRawBufferPointer(rebasing: sealed[..<split]),
                                               tag: UnsafeRawBufferPointer(rebasing: sealed[split...])),
              let plain = try? AES.GCM.open(box, using: fileKey, authenticating: header)
        else { return nil }
        return Array(plain)
    }

    /// Checks `identifier` (read from a file's header) against `key`, naming `store` in the error:
    /// a file sealed with another key, a sealed file with no key, or a key for a file in clear.
    package static func checkKey(_ key: EncryptionKey?, fileIdentifier: [UInt8]?, store: String) throws {
        switch (key, fileIdentifier) {
        case (nil, nil): return
        case (nil, _?): throw StrataError.encryptionKey(store: store, problem: .missingKey)
        case (_?, nil): throw StrataError.encryptionKey(store: store, problem: .storeNotEncrypted)
        case (let k?, let id?):
            guard k.identifier == id else { throw StrataError.encryptionKey(store: store, problem: .wrongKey) }
        }
    }
}
