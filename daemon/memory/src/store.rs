//! [`Memory`]: one agent's entries in RAM, their BM25 index, and the CRMEM
//! file they are flushed to after every change.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};

use crabtalk_home::write_atomic_private;

use crate::entry::{Entry, EntryKind, MAX_CONTENT_BYTES, check_name};
use crate::error::MemoryError;
use crate::format;
use crabtalk_bm25 as bm25;

/// A change to a memory. The set is closed: every write goes through
/// [`Memory::apply`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Creates an entry. `name` and every alias must be free.
    Add {
        name: String,
        content: String,
        aliases: Vec<String>,
        kind: EntryKind,
    },
    /// Rewrites the content and the aliases of the entry that `name` (a name
    /// or an alias) resolves to; its kind, id and creation time stay. With
    /// `rename`, the entry's canonical name becomes that name, which must be
    /// free or already one of this entry's names. The old name is let go
    /// unless it is listed in `aliases`.
    Update {
        name: String,
        content: String,
        aliases: Vec<String>,
        rename: Option<String>,
    },
    /// Binds more aliases to the entry `name` resolves to. Names that already
    /// resolve to it are skipped.
    Alias { name: String, aliases: Vec<String> },
    /// Deletes the entry `name` resolves to, with all its aliases.
    Remove { name: String },
}

/// One recall result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Recall<'a> {
    pub entry: &'a Entry,
    pub score: f64,
}

/// One agent's memory.
///
/// Every [`apply`](Memory::apply) encodes the memory as it will be after the
/// op, writes it with `write_atomic` (temp file, fsync, rename, fsync
/// folder), and only then changes RAM and the index: an op that fails leaves
/// both the file and the memory as they were.
#[derive(Debug)]
pub struct Memory {
    pub(super) path: PathBuf,
    pub(super) next_id: u64,
    pub(super) entries: BTreeMap<u64, Entry>,
    /// Every name and alias, to the id of its entry.
    pub(super) names: HashMap<String, u64>,
    pub(super) index: bm25::Index<u64>,
}

enum Change<'a> {
    Put(&'a Entry),
    Delete(u64),
}

impl Memory {
    /// Opens the memory file at `path`. A missing file is an empty memory; the
    /// file is created by the first successful write.
    pub fn open(path: impl Into<PathBuf>) -> Result<Self, MemoryError> {
        let path = path.into();
        let snapshot = match std::fs::read(&path) {
            Ok(bytes) => format::decode(&bytes).map_err(|reason| MemoryError::BadFormat {
                path: path.clone(),
                reason,
            })?,
            Err(err) if err.kind() == io::ErrorKind::NotFound => format::Snapshot {
                next_id: 1,
                entries: Vec::new(),
            },
            Err(err) => return Err(MemoryError::io(path, err)),
        };
        let mut memory = Memory {
            path,
            next_id: snapshot.next_id,
            entries: BTreeMap::new(),
            names: HashMap::new(),
            index: bm25::Index::new(),
        };
        for entry in snapshot.entries {
            memory.commit_put(entry);
        }
        Ok(memory)
    }

    /// The file this memory is kept in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The id the next added entry will get.
    pub fn next_id(&self) -> u64 {
        self.next_id
    }

    /// The entry `name` (a name or an alias) resolves to.
    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.names.get(name).map(|id| &self.entries[id])
    }

    /// Every entry, by ascending id.
    pub fn list(&self) -> impl ExactSizeIterator<Item = &Entry> {
        self.entries.values()
    }

    /// The `limit` entries that best match `query` (BM25 over name, aliases
    /// and content), best first, equal scores by ascending id. The caller
    /// picks any relevance cutoff.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Recall<'_>> {
        self.search_where(query, limit, |_| true)
    }

    /// Like [`search`](Self::search), among the entries `keep` accepts
    /// only (filtered before the cut, so `limit` of them come back when
    /// that many match).
    pub fn search_where(
        &self,
        query: &str,
        limit: usize,
        keep: impl Fn(&Entry) -> bool,
    ) -> Vec<Recall<'_>> {
        let entries = &self.entries;
        self.index
            .search(query, limit, |id| {
                entries.get(&id).is_some_and(&keep).then_some(1.0)
            })
            .into_iter()
            .map(|hit| Recall {
                entry: &self.entries[&hit.doc],
                score: hit.score,
            })
            .collect()
    }

    /// Applies `op` and flushes; new entries are stamped with the current
    /// time. Returns the id of the entry the op touched.
    pub fn apply(&mut self, op: Op) -> Result<u64, MemoryError> {
        self.apply_at(op, unix_now())
    }

    /// [`apply`](Memory::apply) with an explicit creation time (unix seconds)
    /// for added entries: compaction stamps an archive with its marker's time,
    /// and tests need fixed times.
    pub fn apply_at(&mut self, op: Op, now: u64) -> Result<u64, MemoryError> {
        match op {
            Op::Add {
                name,
                content,
                aliases,
                kind,
            } => {
                check_name(&name).map_err(|reason| invalid(&name, reason))?;
                if let Some(owner) = self.names.get(&name) {
                    return Err(self.taken(&name, *owner));
                }
                let aliases = self.clean_aliases(&name, aliases, None)?;
                check_content(&name, &content)?;
                let id = self.next_id;
                let next_id = id.checked_add(1).ok_or_else(|| {
                    MemoryError::io(
                        &self.path,
                        io::Error::other("the entry id space is exhausted"),
                    )
                })?;
                let entry = Entry {
                    id,
                    name,
                    content,
                    aliases,
                    created_at: now,
                    kind,
                };
                self.flush(next_id, Some(Change::Put(&entry)))?;
                self.next_id = next_id;
                self.commit_put(entry);
                Ok(id)
            }
            Op::Update {
                name,
                content,
                aliases,
                rename,
            } => {
                let id = self.resolve(&name)?;
                let current = &self.entries[&id];
                let new_name = match rename {
                    Some(new_name) => {
                        check_name(&new_name).map_err(|reason| invalid(&new_name, reason))?;
                        match self.names.get(&new_name) {
                            Some(owner) if *owner != id => {
                                return Err(self.taken(&new_name, *owner));
                            }
                            _ => new_name,
                        }
                    }
                    None => current.name.clone(),
                };
                let aliases = self.clean_aliases(&new_name, aliases, Some(id))?;
                check_content(&new_name, &content)?;
                let entry = Entry {
                    id,
                    name: new_name,
                    content,
                    aliases,
                    created_at: current.created_at,
                    kind: current.kind,
                };
                self.flush(self.next_id, Some(Change::Put(&entry)))?;
                self.commit_put(entry);
                Ok(id)
            }
            Op::Alias { name, aliases } => {
                let id = self.resolve(&name)?;
                let mut entry = self.entries[&id].clone();
                let added = self.clean_aliases(&entry.name, aliases, Some(id))?;
                let before = entry.aliases.len();
                for alias in added {
                    if !entry.aliases.contains(&alias) {
                        entry.aliases.push(alias);
                    }
                }
                if entry.aliases.len() == before {
                    return Ok(id);
                }
                self.flush(self.next_id, Some(Change::Put(&entry)))?;
                self.commit_put(entry);
                Ok(id)
            }
            Op::Remove { name } => {
                let id = self.resolve(&name)?;
                self.flush(self.next_id, Some(Change::Delete(id)))?;
                let entry = self.entries.remove(&id).expect("resolved ids exist");
                for name in std::iter::once(&entry.name).chain(&entry.aliases) {
                    self.names.remove(name);
                }
                self.index.remove(id);
                Ok(id)
            }
        }
    }

    /// Writes the memory as it is, without a change (e.g. to recreate a file
    /// deleted under the daemon, or before a backup).
    pub fn checkpoint(&self) -> Result<(), MemoryError> {
        self.flush(self.next_id, None)
    }

    /// Replaces every entry with `entries` (ids are assigned here, from
    /// `next_id` on, so ids are never reused). Names must already be
    /// validated and unique. Flushes before touching RAM.
    pub(super) fn replace_all(&mut self, entries: Vec<Entry>) -> Result<(), MemoryError> {
        let mut next_id = self.next_id;
        let mut fresh = Vec::with_capacity(entries.len());
        for mut entry in entries {
            entry.id = next_id;
            next_id = next_id.checked_add(1).ok_or_else(|| {
                MemoryError::io(
                    &self.path,
                    io::Error::other("the entry id space is exhausted"),
                )
            })?;
            fresh.push(entry);
        }
        let bytes = format::encode(next_id, fresh.iter());
        write_atomic_private(&self.path, &bytes).map_err(|err| MemoryError::io(&self.path, err))?;
        self.next_id = next_id;
        self.entries.clear();
        self.names.clear();
        self.index = bm25::Index::new();
        for entry in fresh {
            self.commit_put(entry);
        }
        Ok(())
    }

    fn resolve(&self, name: &str) -> Result<u64, MemoryError> {
        self.names
            .get(name)
            .copied()
            .ok_or_else(|| MemoryError::NotFound {
                name: name.to_owned(),
            })
    }

    fn taken(&self, name: &str, owner: u64) -> MemoryError {
        MemoryError::NameTaken {
            name: name.to_owned(),
            owner: self.entries[&owner].name.clone(),
        }
    }

    /// Validates `aliases` for an entry named `name` (`owner`: its id, if it
    /// exists): drops repeats and the name itself, refuses names owned by
    /// another entry.
    fn clean_aliases(
        &self,
        name: &str,
        aliases: Vec<String>,
        owner: Option<u64>,
    ) -> Result<Vec<String>, MemoryError> {
        let mut out: Vec<String> = Vec::with_capacity(aliases.len());
        for alias in aliases {
            check_name(&alias).map_err(|reason| invalid(&alias, reason))?;
            if alias == name || out.contains(&alias) {
                continue;
            }
            if let Some(&other) = self.names.get(&alias)
                && Some(other) != owner
            {
                return Err(self.taken(&alias, other));
            }
            out.push(alias);
        }
        Ok(out)
    }

    fn flush(&self, next_id: u64, change: Option<Change<'_>>) -> Result<(), MemoryError> {
        let mut entries: Vec<&Entry> = Vec::with_capacity(self.entries.len() + 1);
        match change {
            None => entries.extend(self.entries.values()),
            Some(Change::Put(put)) => {
                entries.extend(
                    self.entries
                        .values()
                        .map(|e| if e.id == put.id { put } else { e }),
                );
                if !self.entries.contains_key(&put.id) {
                    // New ids are above every existing one: order is kept.
                    entries.push(put);
                }
            }
            Some(Change::Delete(id)) => {
                entries.extend(self.entries.values().filter(|e| e.id != id))
            }
        }
        let bytes = format::encode(next_id, entries.iter().copied());
        write_atomic_private(&self.path, &bytes).map_err(|err| MemoryError::io(&self.path, err))
    }

    /// Puts `entry` into RAM and the index, replacing the entry with its id.
    fn commit_put(&mut self, entry: Entry) {
        if let Some(old) = self.entries.get(&entry.id) {
            for name in std::iter::once(&old.name).chain(&old.aliases) {
                self.names.remove(name);
            }
        }
        for name in std::iter::once(&entry.name).chain(&entry.aliases) {
            self.names.insert(name.clone(), entry.id);
        }
        self.index.insert(entry.id, &entry.indexed_text());
        self.entries.insert(entry.id, entry);
    }
}

fn invalid(name: &str, reason: &'static str) -> MemoryError {
    MemoryError::InvalidName {
        name: name.to_owned(),
        reason,
    }
}

fn check_content(name: &str, content: &str) -> Result<(), MemoryError> {
    if content.len() > MAX_CONTENT_BYTES {
        return Err(MemoryError::ContentTooLarge {
            name: name.to_owned(),
            len: content.len(),
            max: MAX_CONTENT_BYTES,
        });
    }
    Ok(())
}

pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
