package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
)

func main() {
	ctx := context.Background()
	st, err := store.Open(ctx, os.Args[1], store.Options{Layout: store.LayoutBucket})
	if err != nil {
		panic(err)
	}
	ix, _ := index.Open(ctx, st, index.Options{})
	ix.Load(ctx)
	base := time.Now().UnixNano() % 1000000
	for i := int64(0); i < 10; i++ {
		e := store.Entry{Kind: store.KindSig, Object: fmt.Sprintf("%064x", base*100+i), Value: "probe"}
		t0 := time.Now()
		st.Put(ctx, e.Key(), []byte("x"))
		t1 := time.Now()
		_, err := fold.Append(ctx, st, []string{e.Key()})
		t2 := time.Now()
		err2 := ix.Put(ctx, store.Entry{Kind: store.KindSig, Object: fmt.Sprintf("%064x", base*100+50+i), Value: "probe"}, []byte("y"))
		t3 := time.Now()
		fmt.Println("put", t1.Sub(t0), "append", t2.Sub(t1), err, "ix.Put", t3.Sub(t2), err2, st.Counts())
	}
}
