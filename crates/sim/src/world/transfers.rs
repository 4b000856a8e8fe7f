//! The transfers of a run, by index, in pages that are freed once every transfer on them has
//! ended and its record was taken (`Simulation::take_records`), so that a run that writes its
//! records out as it goes holds memory for the transfers in flight (and the pages they share
//! with ended ones), not for every transfer ever started.
//!
//! A page holds [`PAGE`] consecutive transfers. A transfer that lasts (a flow in
//! retransmission-timeout backoff for tens of milliseconds) keeps its own page alive, not the
//! transfers started after it: with records taken in order instead, one such flow of the
//! 1.7 M-flow `long_poisson` benchmark held back 218 k records.
//!
//! INVARIANT: transfer `f` is on page `f >> PAGE_BITS`, at `f & (PAGE - 1)`; `pages[k]` is page
//! `first_page + k`; a page is `None` once all its [`PAGE`] transfers were taken, and only the
//! front of `pages` is ever popped, so indices never move.
//! INVARIANT: a transfer is `taken` only after it was released (its record can no longer
//! change), or at the end of the run.

use std::collections::VecDeque;

use super::host::{Transfer, TransferRt};

/// log2 of the transfers per page.
const PAGE_BITS: usize = 10;
/// Transfers per page (1,024: about 200 KB of state).
pub(crate) const PAGE: usize = 1 << PAGE_BITS;

#[derive(Debug, Default)]
struct Page {
    specs: Vec<Transfer>,
    rt: Vec<TransferRt>,
    /// Transfers on the page whose record was taken.
    taken: usize,
}

/// The transfers of a run (module docs).
#[derive(Debug, Default)]
pub(crate) struct Transfers {
    pages: VecDeque<Option<Box<Page>>>,
    first_page: usize,
    /// Transfers started so far.
    len: usize,
    /// Released transfers whose records were not taken yet, in release order.
    ended: Vec<u32>,
}

impl Transfers {
    /// Transfers started so far.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Add transfer `len()`; returns its index.
    pub(crate) fn push(&mut self, spec: Transfer, rt: TransferRt) -> usize {
        let f = self.len;
        if f & (PAGE - 1) == 0 {
            self.pages.push_back(Some(Box::new(Page {
                specs: Vec::with_capacity(PAGE),
                rt: Vec::with_capacity(PAGE),
                taken: 0,
            })));
        }
        // CORRECTNESS: the page of `f` was pushed above or at an earlier index of the same page,
        // and is not freed before all its PAGE transfers exist and were taken.
        if let Some(Some(page)) = self.pages.back_mut() {
            page.specs.push(spec);
            page.rt.push(rt);
        }
        self.len += 1;
        f
    }

    #[inline]
    fn page(&self, f: usize) -> Option<&Page> {
        let k = (f >> PAGE_BITS).checked_sub(self.first_page)?;
        self.pages.get(k)?.as_deref()
    }

    #[inline]
    fn page_mut(&mut self, f: usize) -> Option<&mut Page> {
        let k = (f >> PAGE_BITS).checked_sub(self.first_page)?;
        self.pages.get_mut(k)?.as_deref_mut()
    }

    /// Transfer `f`, unless its page was freed or it does not exist.
    #[inline]
    pub(crate) fn get(&self, f: usize) -> Option<(&Transfer, &TransferRt)> {
        let p = self.page(f)?;
        let i = f & (PAGE - 1);
        Some((p.specs.get(i)?, p.rt.get(i)?))
    }

    /// Transfer `f`'s runtime state, unless its page was freed or it does not exist.
    #[inline]
    pub(crate) fn rt_mut(&mut self, f: usize) -> Option<&mut TransferRt> {
        self.page_mut(f)?.rt.get_mut(f & (PAGE - 1))
    }

    /// Transfer `f`'s request and runtime state (both may be changed only through the state).
    #[inline]
    pub(crate) fn get_mut(&mut self, f: usize) -> Option<(&Transfer, &mut TransferRt)> {
        let p = self.page_mut(f)?;
        let i = f & (PAGE - 1);
        Some((p.specs.get(i)?, p.rt.get_mut(i)?))
    }

    /// Transfer `f` was released: its record is final and may be taken.
    pub(crate) fn ended(&mut self, f: usize) {
        self.ended.push(f as u32);
    }

    /// Take the released transfers (or, with `all`, every transfer left): call `record` on each
    /// with its index, in release order (then index order), mark it taken, and free the pages
    /// whose transfers were all taken.
    pub(crate) fn take<R>(&mut self, all: bool, mut record: impl FnMut(usize, &Transfer, &TransferRt) -> R) -> Vec<R> {
        let mut out = Vec::with_capacity(self.ended.len());
        let mut ended = std::mem::take(&mut self.ended);
        if all {
            // Every transfer not taken yet, in index order after the released ones.
            for (k, p) in self.pages.iter().enumerate() {
                let Some(p) = p else { continue };
                let base = (self.first_page + k) << PAGE_BITS;
                ended.extend((0..p.rt.len()).filter(|&i| !p.rt[i].taken && !p.rt[i].released).map(|i| (base + i) as u32));
            }
        }
        for &f in &ended {
            let f = f as usize;
            let Some(p) = self.page_mut(f) else { continue };
            let i = f & (PAGE - 1);
            if p.rt[i].taken {
                continue;
            }
            p.rt[i].taken = true;
            p.taken += 1;
            out.push(record(f, &p.specs[i], &p.rt[i]));
        }
        ended.clear();
        self.ended = ended;
        // Free every page whose transfers all exist and were taken; drop freed pages at the front.
        for p in &mut self.pages {
            if p.as_ref().is_some_and(|p| p.taken == PAGE) {
                *p = None;
            }
        }
        while self.pages.front().is_some_and(Option::is_none) {
            self.pages.pop_front();
            self.first_page += 1;
        }
        out
    }

    /// Every transfer held and not taken, in index order.
    pub(crate) fn untaken(&self) -> impl Iterator<Item = (usize, &Transfer, &TransferRt)> {
        self.pages.iter().enumerate().flat_map(move |(k, p)| {
            let base = (self.first_page + k) << PAGE_BITS;
            p.iter().flat_map(move |p| {
                p.specs.iter().zip(&p.rt).enumerate().filter(|(_, (_, rt))| !rt.taken).map(move |(i, (s, rt))| (base + i, s, rt))
            })
        })
    }

    /// Transfers whose state is held (the pages not freed).
    pub(crate) fn held(&self) -> usize {
        self.pages.iter().flatten().map(|p| p.rt.len()).sum()
    }
}
