import Synchronization
import TableModel
import TablecastProtocol
import WebSocketTransport

/// How a subscription's messages read as server-sent events: `snapshot` and `update` events with their position
/// as id (see ``EventStreamPosition``), the table's other news (`presence`, `rules`, `dropped`, `unsubscribed`)
/// as events of their type without one; the session's own answers (`welcome`, `subscribed`) are not sent. An
/// error before the first event answers the request instead (401, 403, 404...).
enum EventStream {
    static func make(cors: [HTTPHeader], resume: EventStreamPosition?) -> HTTPEventStream {
        // Updates carry no epoch: it is the last snapshot's, or the resumed one's (a resume in another epoch gets a
        // snapshot first).
        let epoch = Mutex<String?>(resume?.epoch)
        return HTTPEventStream(
            headers: cors, heartbeat: EventStreamFraming.heartbeat,
            frame: { message in
                let bytes = message.withUnsafeBytes { Array($0) }
                guard case .object(let fields)? = try? JSONValue(parsing: bytes),
                    case .string(let type)? = fields["type"]
                else { return .skip }
                switch type {
                case "welcome", "subscribed", "refreshed":
                    if case .string(let current)? = fields["epoch"] { epoch.withLock { $0 = current } }
                    return .skip
                case "error":
                    return .refuse(APIStatus.reply(HTTPGateway.error(fields), headers: cors))
                case "snapshot", "update":
                    if case .string(let current)? = fields["epoch"] { epoch.withLock { $0 = current } }
                    guard case .number(let version)? = fields["version"] else { return .skip }
                    let position = EventStreamPosition(epoch: epoch.withLock { $0 }, version: UInt64(version))
                    return .bytes(EventStreamFraming.event(type, id: position.id, data: bytes))
                default:
                    return .bytes(EventStreamFraming.event(type, id: nil, data: bytes))
                }
            },
            closing: { frame in EventStreamFraming.close(code: frame.code.rawValue, reason: frame.reason) })
    }
}
