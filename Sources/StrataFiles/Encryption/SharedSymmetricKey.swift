import Crypto

/// A `SymmetricKey` that may cross concurrency domains: swift-crypto 4 declares `SymmetricKey`
/// `Sendable`, 3.x (which Strata's dependency range admits, and which a program's other packages
/// may pin) does not. The key is immutable after `init`, so sharing it is safe with either.
package struct SharedSymmetricKey: @unchecked Sendable {
    package let key: SymmetricKey

    package init(_ key: SymmetricKey) {
        self.key = key
    }
}
