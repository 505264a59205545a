import TableModel
import TablecastProtocol

/// The WebSocket request an API route stands for, built as the JSON text a WebSocket client would send, so that
/// the router decodes and checks it as it does theirs.
enum APIRequest {
    /// The ref of the API's requests other than intents: their answers are matched by exchange, not by ref.
    static let ref = "http"

    /// The message for `route`; `body` is the request's, `idempotencyKey` an intent's ref, `resume` where an event
    /// stream goes on from (its `Last-Event-ID`).
    static func message(
        for route: APIRoute, body: [UInt8], idempotencyKey: String?, resume: EventStreamPosition?
    ) -> Result<JSONValue, ProtocolError> {
        var message: [String: JSONValue]
        switch route {
        case .listTables:
            message = ["type": "listTables"]
        case .createTable:
            switch object(body) {
            case .failure(let error): return .failure(error)
            case .success(let fields):
                if fields["ref"] != nil {
                    return .failure(ProtocolError(.badRequest, "the body may not have 'ref'"))
                }
                if let type = fields["type"], type != "createTable" {
                    return .failure(ProtocolError(.badRequest, "the body's 'type', if any, must be createTable"))
                }
                message = fields.merging(["type": "createTable"]) { $1 }
            }
        case .dropTable(let table):
            message = ["type": "dropTable", "table": .string(table)]
        case .setRules(let table):
            switch object(body) {
            case .failure(let error): return .failure(error)
            case .success(let rules): message = ["type": "setRules", "table": .string(table), "rules": .object(rules)]
            }
        case .snapshot(let table):
            message = ["type": "refresh", "table": .string(table)]
        case .intent(let table):
            switch object(body) {
            case .failure(let error): return .failure(error)
            case .success(let fields):
                guard case .string(let type)? = fields["type"], ClientMessage.intentTypes.contains(type) else {
                    return .failure(
                        ProtocolError(
                            .badRequest,
                            "the body must be an intent: an object whose 'type' is one of "
                                + ClientMessage.intentTypes.sorted().joined(separator: ", ")))
                }
                if let named = fields["table"], named != .string(table) {
                    return .failure(ProtocolError(.badRequest, "the body's 'table' is not the path's '\(table)'"))
                }
                if fields["ref"] != nil {
                    return .failure(ProtocolError(.badRequest, "the body may not have 'ref': send Idempotency-Key"))
                }
                // The key becomes the ref: refused here, so that the message names the header, not 'ref'.
                let maxKeyLength = ProtocolLimits().maxRefLength
                if let idempotencyKey, idempotencyKey.count > maxKeyLength {
                    return .failure(
                        ProtocolError(
                            .badRequest, "the Idempotency-Key header must be at most \(maxKeyLength) characters"))
                }
                message = fields.merging(["table": .string(table)]) { $1 }
                if let idempotencyKey { message["ref"] = .string(idempotencyKey) }
                return .success(.object(message))
            }
        case .history(let table, let query):
            message = ["type": "history", "table": .string(table)]
            for (name, value) in query {
                message[name] = name == "order" ? .string(value) : .number(Double(UInt64(value) ?? 0))
            }
        case .snapshotAt(let table, let version):
            message = ["type": "snapshotAt", "table": .string(table), "version": .number(Double(version))]
        case .events(let table):
            message = ["type": "subscribe", "table": .string(table)]
            if let resume {
                message["since"] = .number(Double(resume.version))
                if let epoch = resume.epoch { message["epoch"] = .string(epoch) }
            }
        case .openAPI, .schema:
            return .failure(ProtocolError(.internal, "the OpenAPI document and its schemas are not table requests"))
        }
        message["ref"] = .string(ref)
        return .success(.object(message))
    }

    /// The body as a JSON object.
    private static func object(_ body: [UInt8]) -> Result<[String: JSONValue], ProtocolError> {
        guard !body.isEmpty else { return .failure(ProtocolError(.badRequest, "the request has no body")) }
        let value: JSONValue
        do {
            value = try JSONValue(parsing: body)
        } catch {
            return .failure(ProtocolError(.badRequest, "the body is not JSON: \(error)"))
        }
        guard case .object(let fields) = value else {
            return .failure(ProtocolError(.badRequest, "the body must be a JSON object"))
        }
        return .success(fields)
    }
}
