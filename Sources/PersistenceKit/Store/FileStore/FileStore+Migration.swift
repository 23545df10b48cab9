extension FileStore {
    /// The primary key the store would hand out next for `entity`, or `nil` when it never
    /// handed one out. Migration carries it over, so that keys handed out before (to objects
    /// given permanent IDs but not saved) are never handed out again.
    func nextPrimaryKey(entity: Int32) throws(FileStoreError) -> Int64? {
        try state.withLock { s throws(FileStoreError) -> Int64? in
            try prepare(&s)
            return s.tables[entity]?.nextKey
        }
    }
}
