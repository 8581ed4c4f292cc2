import Foundation

/// The body of an FCM HTTP v1 `messages:send` request:
/// `{"message":{"token":<device token>, …every top-level member of the payload…}}`.
///
/// The payload (JSON text of an object, such as `PushFormat.google(...)` makes) is spliced in
/// as it is, without parsing and re-encoding it, unless it has a `token` member of its own: then
/// it is re-encoded without that member (the device's token is the one that counts). A payload
/// that is not a JSON object cannot become a message: ``body(deviceToken:payload:)`` returns nil
/// and the notification is rejected (`InvalidPayload`).
enum FCMMessage {
    /// The request body, or nil when `payload` is not a JSON object.
    static func body(deviceToken: String, payload: String) -> Data? {
        let trimmed = payload.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.hasPrefix("{"), trimmed.hasSuffix("}"), trimmed.count >= 2 else { return nil }
        let token = quoted(deviceToken)
        if trimmed.contains("\"token\"") {
            guard var object = (try? JSONSerialization.jsonObject(with: Data(trimmed.utf8))) as? [String: Any] else { return nil }
            object["token"] = deviceToken
            guard let data = try? JSONSerialization.data(withJSONObject: ["message": object], options: [.sortedKeys, .withoutEscapingSlashes]) else { return nil }
            return data
        }
        let inner = trimmed.dropFirst().dropLast()
        guard inner.contains(where: { !$0.isWhitespace }) else {
            return Data("{\"message\":{\"token\":\(token)}}".utf8)
        }
        // Only an object's text gets here; a payload that is not valid JSON inside stays invalid,
        // and FCM answers 400 INVALID_ARGUMENT about it.
        return Data("{\"message\":{\"token\":\(token),\(inner)}}".utf8)
    }

    /// `text` as a JSON string literal.
    static func quoted(_ text: String) -> String {
        var out = "\""
        out.reserveCapacity(text.utf8.count + 2)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
