import TableStore
import TablecastProtocol

extension ProtocolError {
    /// `unavailable`: `what` could not be done because of `error`, a store failure, told in words a client may
    /// see. The store's own text (file paths, SQL, library messages) goes to the log only.
    static func unavailable(_ what: String, _ error: any Error) -> ProtocolError {
        ProtocolError(.unavailable, "\(what): \(reason(error))")
    }

    /// `unavailable` for intents whose commit failed: nothing was applied, unless the connection to the database was
    /// lost on the way (the commit may have gone through and its answer been lost): a retry with the same ref then
    /// tells, as it is answered with the stored ack if there is one, and is never applied twice.
    static func notStored(_ error: any Error) -> ProtocolError {
        guard (error as? StoreError)?.outcomeUnknown == true else {
            return unavailable("the change could not be stored, nothing was applied", error)
        }
        return ProtocolError(
            .unavailable,
            "the connection to the database was lost while the change was being stored: it may have been stored; "
                + "send it again with the same ref to know (it is never applied twice)")
    }

    /// Why the store failed, without its text.
    static func reason(_ error: any Error) -> String {
        if error is Committer.Stopped { return "the server is shutting down" }
        guard let error = error as? StoreError else { return "the database failed" }
        return switch error.kind {
        case .unreachable: "the database cannot be reached"
        case .full: "the disk or the database is full"
        case .readOnly: "the database is read-only"
        case .io: "the database had an I/O error"
        case .busy: "the database is locked by another process"
        case .corrupt, .notADatabase: "the database is damaged"
        default: "the database failed"
        }
    }
}
