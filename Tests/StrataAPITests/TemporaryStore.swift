import Foundation
import Strata

/// A directory of its own under the temporary directory, for one test's store; removed (with
/// the store closed) when the test ends.
final class TemporaryStore {
    let directory: URL

    init(_ name: String = #function) {
        let safe = name.filter { $0.isLetter || $0.isNumber }
        directory = FileManager.default.temporaryDirectory
            .appending(path: "strata-api-\(safe)-\(UUID().uuidString)")
    }

    /// Opens (or reopens) the store in the directory.
    func open(options: StoreOptions = StoreOptions()) throws -> Store {
        try Store.open(at: directory, options: options)
    }

    deinit {
        try? Store.destroy(at: directory)
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Whether `error` is the `StrataError` case that `matches` accepts: errors are told apart by
/// their case, never by their text.
func isStrataError(_ error: (any Error)?, _ matches: (StrataError) -> Bool) -> Bool {
    guard let error = error as? StrataError else { return false }
    return matches(error)
}
