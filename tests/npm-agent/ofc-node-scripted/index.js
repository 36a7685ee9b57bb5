console.log("never started");
