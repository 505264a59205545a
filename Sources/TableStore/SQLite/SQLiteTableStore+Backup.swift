import Foundation

/// What a backup copy holds.
public struct BackupReport: Sendable {
    /// The copy's size in bytes.
    public var bytes: Int64
    /// Every table in the copy, with the version it holds.
    public var tables: [TableInfo]
}

extension SQLiteTableStore {
    /// Copies the store at `source` into a new file at `destination`, consistently, while a server keeps writing
    /// to it: SQLite's online backup API reads the database as of one commit. The copy is written beside
    /// `destination`, synced, checked by opening it as a store, and only then renamed into place, so a failed or
    /// interrupted backup never leaves a partial file under that name. `destination` must not exist. The copy's
    /// tables get new epochs: a client of the source never resumes on it.
    ///
    /// Restoring is starting a server on the copy.
    public static func backup(from source: String, to destination: String) throws -> BackupReport {
        guard !FileManager.default.fileExists(atPath: destination) else {
            throw StoreError(.io, "\(destination) already exists; a backup never replaces a file")
        }
        var options = TableStoreOptions()
        options.readOnly = true
        options.checkIntegrityOnOpen = false
        let store = try SQLiteTableStore(path: source, options: options)
        defer { try? store.close() }
        let partial = destination + ".partial"
        try? FileManager.default.removeItem(atPath: partial)
        do {
            let copy = try SQLiteConnection(path: partial)
            try store.connection.backup(into: copy)
            // The copy of a WAL database is marked WAL; keep it a single self-contained file.
            try copy.execute("PRAGMA journal_mode = DELETE")
            try renew(copy, at: partial)
            copy.close()
        } catch {
            try? FileManager.default.removeItem(atPath: partial)
            if let error = error as? SQLiteError { throw StoreError(error, while: "copying \(source) to \(partial)") }
            throw error
        }
        return try install(partial, as: destination)
    }

    /// Gives the tables of the copy at `path`, open on `copy`, new epochs, so that no client resumes across the
    /// copy, and records the copy's identity: the rename that installs it keeps it, so the first server on the copy
    /// finds it in place, and a further copy of the file gets new epochs again.
    static func renew(_ copy: SQLiteConnection, at path: String) throws {
        try copy.execute("BEGIN IMMEDIATE")
        do {
            try renewEpochs(copy, identity: identity(of: path))
            try copy.execute("COMMIT")
        } catch {
            try? copy.execute("ROLLBACK")
            throw error
        }
    }

    /// Checks that the copy at `partial` opens as a store, renames it to `destination` and makes that durable; on
    /// failure removes it.
    static func install(_ partial: String, as destination: String) throws -> BackupReport {
        let tables: [TableInfo]
        do {
            var check = TableStoreOptions()
            check.readOnly = true
            let copy = try SQLiteTableStore(path: partial, options: check)
            tables = try copy.listTables()
            try copy.close()
        } catch {
            try? FileManager.default.removeItem(atPath: partial)
            throw error
        }
        guard rename(partial, destination) == 0 else {
            let reason = String(cString: strerror(errno))
            try? FileManager.default.removeItem(atPath: partial)
            throw StoreError(.io, "cannot rename \(partial) to \(destination): \(reason)")
        }
        syncDirectory(of: destination)
        let attributes = try? FileManager.default.attributesOfItem(atPath: destination)
        return BackupReport(bytes: (attributes?[.size] as? NSNumber)?.int64Value ?? 0, tables: tables)
    }

    /// Makes the rename durable: a directory entry is only on disk once the directory is synced.
    private static func syncDirectory(of path: String) {
        let directory = (path as NSString).deletingLastPathComponent
        let descriptor = open(directory.isEmpty ? "." : directory, O_RDONLY)
        guard descriptor >= 0 else { return }
        fsync(descriptor)
        Foundation.close(descriptor)
    }
}
