/// The key the inspection tools (strata-dump, `StoreVerifier`, the collections' inspectors) read
/// an encrypted store's files with, for the duration of one call: `strata-dump --key-file` and
/// the public entry points that take a `key` set it around their work, and every reader the
/// tools make below them takes it from here (``StoreImage``'s snapshot by default).
package enum InspectionKey {
    @TaskLocal package static var current: EncryptionKey?
}
