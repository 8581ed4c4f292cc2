// strata-push-crash-helper: the child process of the push delivery crash tests. It opens a store,
// delivers its outbox to the peers named on the command line until it is killed (`kill -9`), and
// reports on standard output:
//
//     ready                                   once the delivery runs
//     status delivered=<n> pending=<0|1>      whenever either changes (pending: whether the outbox
//                                             still holds an unacknowledged due notification)
//     error <description>                     when run() throws (then it exits with status 2)
//     stopped                                 when run() returns (then it exits with status 0)
//
// Usage:
//     strata-push-crash-helper <store-directory>
//         [--apns-url URL --apns-key P8-FILE --key-id ID --team-id ID]
//         [--fcm-account JSON-FILE --fcm-endpoint URL]
//         [--ca PEM-FILE] [--max-in-flight N] [--ack-batch N] [--retry-base-ms N]
import Foundation
import Strata
import StrataPushDelivery

/// Writes a line to standard output at once (no buffering: the parent reads it while we run).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data(("strata-push-crash-helper: " + message + "\n").utf8))
    exit(64)
}

/// The store directory and the `--name value` flags.
func parseArguments() -> (storePath: String, flags: [String: String]) {
    var arguments = Array(CommandLine.arguments.dropFirst())
    guard let storePath = arguments.first, !storePath.hasPrefix("--") else {
        fail("usage: strata-push-crash-helper <store-directory> [--apns-url URL --apns-key FILE --key-id ID --team-id ID] "
            + "[--fcm-account FILE --fcm-endpoint URL] [--ca FILE] [--max-in-flight N] [--ack-batch N] [--retry-base-ms N]")
    }
    arguments.removeFirst()
    var flags: [String: String] = [:]
    while !arguments.isEmpty {
        let name = arguments.removeFirst()
        guard name.hasPrefix("--"), !arguments.isEmpty else { fail("expected --name value, got \(name)") }
        flags[String(name.dropFirst(2))] = arguments.removeFirst()
    }
    return (storePath, flags)
}

let (storePath, flags) = parseArguments()

func text(_ flag: String) -> String? {
    guard let path = flags[flag] else { return nil }
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { fail("cannot read --\(flag) \(path)") }
    return text
}

func number(_ flag: String) -> Int? {
    guard let value = flags[flag] else { return nil }
    guard let number = Int(value) else { fail("--\(flag) \(value) is not a number") }
    return number
}

do {
    let store = try Store.open(at: URL(fileURLWithPath: storePath), options: StoreOptions(durability: .buffered))
    let push = try store.pushNotifications()
    let roots = text("ca")

    var apns: APNsConfiguration?
    if let url = flags["apns-url"] {
        guard let key = text("apns-key"), let keyID = flags["key-id"], let teamID = flags["team-id"], let base = URL(string: url)
        else { fail("--apns-url needs --apns-key, --key-id and --team-id") }
        apns = try APNsConfiguration(privateKeyPEM: key, keyID: keyID, teamID: teamID, environment: .custom(base),
                                     trustedRootCertificatesPEM: roots)
    }
    var fcm: FCMConfiguration?
    if let path = flags["fcm-account"] {
        guard let json = FileManager.default.contents(atPath: path) else { fail("cannot read --fcm-account \(path)") }
        fcm = try FCMConfiguration(serviceAccountJSON: json, endpoint: flags["fcm-endpoint"].flatMap(URL.init(string:)),
                                   trustedRootCertificatesPEM: roots)
    }

    var options = PushDeliveryOptions()
    if let maxInFlight = number("max-in-flight") { options.maxInFlight = maxInFlight }
    if let batch = number("ack-batch") { options.acknowledgementBatchSize = batch }
    if let base = number("retry-base-ms") {
        options.retryBaseDelay = .milliseconds(base)
        options.retryMaxDelay = .milliseconds(max(base, 1) * 20)
    }
    let delivery = PushDelivery(push: push, apns: apns, fcm: fcm, options: options)

    Task {
        do {
            try await delivery.run()
            say("stopped")
            exit(0)
        } catch {
            say("error \(error)")
            exit(2)
        }
    }
    say("ready")
    var last = ""
    while true {
        let pending = (try? push.pendingNotifications(limit: 1).count) ?? 1
        let line = "status delivered=\(delivery.statistics.delivered) pending=\(pending)"
        if line != last {
            say(line)
            last = line
        }
        try await Task.sleep(for: .milliseconds(20))
    }
} catch {
    say("error \(error)")
    exit(2)
}
